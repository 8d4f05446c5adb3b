#pragma once
// One generation shared between the HTTP thread that asked for it and the scheduler thread
// that runs it: the spec going in, events and the finish coming out, cancellation either way.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "engine/generation.hpp"

namespace gptoss_server {

class Job {
 public:
  // Events waiting for their consumer, in bytes (text, log probabilities, a fixed cost per
  // event), beyond which the job cancels itself: a consumer that stopped taking (a request
  // thread blocked on a client that does not read) cannot make the server buffer without
  // bound, and the generation's KV pages are freed at the next step.
  static constexpr size_t kDefaultMaxPendingBytes = size_t(4) << 20;

  explicit Job(GenerationSpec spec, size_t max_pending_bytes = kDefaultMaxPendingBytes);
  const GenerationSpec& spec() const { return spec_; }
  std::chrono::steady_clock::time_point submitted_at() const { return submitted_at_; }

  // Any thread: the scheduler drops the sequence (and frees its KV pages) at its next step.
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }
  // Cancelled because its consumer left more than max_pending_bytes waiting.
  bool overflowed() const { return overflowed_.load(); }

  // Consumer: moves pending events into `out`, waiting up to `timeout` for some. Returns the
  // finish once every event before it has been taken.
  std::optional<Finish> take(std::vector<OutputEvent>& out, std::chrono::milliseconds timeout);

  // Scheduler: events of one step, then the finish exactly once.
  void push(std::vector<OutputEvent>&& events);
  void finish(Finish finish);

 private:
  const GenerationSpec spec_;
  const std::chrono::steady_clock::time_point submitted_at_;
  const size_t max_pending_bytes_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> overflowed_{false};
  size_t pending_bytes_ = 0;  // of events_
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<OutputEvent> events_;
  std::optional<Finish> finish_;
};

}  // namespace gptoss_server
