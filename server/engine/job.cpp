#include "engine/job.hpp"

namespace gptoss_server {

namespace {

size_t pending_size(const OutputEvent& e) {
  size_t bytes = 64 + e.text.size() + e.header.recipient.size() + e.header.content_type.size();
  for (const auto& lp : e.logprobs) bytes += 16 + 8 * lp.top.size();
  return bytes;
}

}  // namespace

Job::Job(GenerationSpec spec, size_t max_pending_bytes)
    : spec_(std::move(spec)), submitted_at_(std::chrono::steady_clock::now()),
      max_pending_bytes_(max_pending_bytes) {}

std::optional<Finish> Job::take(std::vector<OutputEvent>& out, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  ready_.wait_for(lock, timeout, [&] { return !events_.empty() || finish_.has_value(); });
  for (auto& e : events_) out.push_back(std::move(e));
  events_.clear();
  pending_bytes_ = 0;
  return finish_;
}

void Job::push(std::vector<OutputEvent>&& events) {
  if (events.empty()) return;
  {
    std::lock_guard lock(mutex_);
    for (auto& e : events) {
      pending_bytes_ += pending_size(e);
      events_.push_back(std::move(e));
    }
    if (pending_bytes_ > max_pending_bytes_ && !cancelled_.exchange(true)) overflowed_.store(true);
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
