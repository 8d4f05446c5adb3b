#include "engine/job.hpp"

namespace gptoss_server {

Job::Job(GenerationSpec spec) : spec_(std::move(spec)), submitted_at_(std::chrono::steady_clock::now()) {}

std::optional<Finish> Job::take(std::vector<OutputEvent>& out, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  ready_.wait_for(lock, timeout, [&] { return !events_.empty() || finish_.has_value(); });
  for (auto& e : events_) out.push_back(std::move(e));
  events_.clear();
  return finish_;
}

void Job::push(std::vector<OutputEvent>&& events) {
  if (events.empty()) return;
  {
    std::lock_guard lock(mutex_);
    for (auto& e : events) events_.push_back(std::move(e));
  }
  ready_.notify_all();
}

void Job::finish(Finish finish) {
  {
    std::lock_guard lock(mutex_);
    if (finish_) return;
    finish_ = std::move(finish);
  }
  ready_.notify_all();
}

}  // namespace gptoss_server
