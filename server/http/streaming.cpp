#include "http/streaming.hpp"

#include <spdlog/spdlog.h>

namespace gptoss_server {

bool follow_jobs(const std::vector<std::shared_ptr<Job>>& jobs, const ClientConnection& client,
                 const std::function<bool(size_t, std::vector<OutputEvent>&)>& on_events,
                 const std::function<bool(size_t, const Finish&)>& on_finish) {
  std::vector<bool> done(jobs.size(), false);
  size_t remaining = jobs.size();
  auto cancel_all = [&] {
    for (const auto& job : jobs) job->cancel();
    return false;
  };
  std::vector<OutputEvent> events;
  while (remaining > 0) {
    bool waited = false;
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (done[i]) continue;
      // Block on one job at a time (briefly, to look at the client); poll the others.
      const auto timeout = std::chrono::milliseconds(waited ? 0 : (jobs.size() == 1 ? 50 : 10));
      waited = true;
      events.clear();
      const std::optional<Finish> finish = jobs[i]->take(events, timeout);
      if (!events.empty() && !on_events(i, events)) return cancel_all();
      if (finish) {
        if (jobs[i]->overflowed())
          spdlog::warn(
              "a client left more than {} bytes of its stream unread: its generation was cancelled",
              Job::kDefaultMaxPendingBytes);
        done[i] = true;
        --remaining;
        if (!on_finish(i, *finish)) return cancel_all();
      }
    }
    if (remaining > 0 && client.closed()) return cancel_all();
  }
  return true;
}

bool write_sse(httplib::DataSink& sink, const nlohmann::json& data, bool named) {
  std::string frame;
  if (named) frame = "event: " + data["type"].get<std::string>() + "\n";
  frame += "data: " + data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
  return sink.write(frame.data(), frame.size());
}

bool write_sse_done(httplib::DataSink& sink) {
  static const std::string frame = "data: [DONE]\n\n";
  return sink.write(frame.data(), frame.size());
}

}  // namespace gptoss_server
