#pragma once
// Continuous batching: one thread owns the model's shared KV pool and every running
// sequence. Each step batches the decode token of every running sequence with chunks of
// prompts still being prefilled (under a per-step token budget) into one
// gptoss_contexts_process. HTTP threads submit jobs and read their events through Job.
// With speculation, a decoding sequence's pending token comes with its draft, all drafts are
// verified in that same step, and drafted tokens count against the budget (drafts shrink to
// fit it; while prompts wait, they take at most half of what the decode tokens leave).
//
// When the pool runs out of pages: prefix-cache entries go first, then the most recently
// admitted running sequence is preempted (its pages freed, its tokens recomputed when it is
// admitted again); new jobs wait in a bounded queue.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gptoss.hpp>
#include "engine/job.hpp"
#include "engine/prefix_cache.hpp"
#include "engine/sequence.hpp"
#include "metrics.hpp"

namespace gptoss_server {

struct SchedulerConfig {
  size_t max_running = 16;         // sequences in the batch at once
  size_t max_queue = 64;           // jobs waiting for a slot; more -> QueueFull
  size_t step_tokens = 256;        // tokens per forward step (decode tokens + prefill chunks)
  size_t context_length = 8192;    // tokens per sequence (prompt + output)
  size_t kv_tokens = 32768;        // full-attention KV capacity of the pool
  gptoss_kv_dtype kv_dtype = gptoss_kv_dtype_f32;
  size_t prefix_cache_entries = 8; // finished sequences kept for prefix reuse
  Speculation speculation;         // drafts verified in the decode steps (on by default)
};

// submit() past max_queue (HTTP 429).
class QueueFull : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// submit() while draining or stopped (HTTP 503).
class NotAccepting : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Scheduler {
 public:
  // Throws gptoss::error when the KV pool cannot be created, std::invalid_argument for an
  // inconsistent config.
  Scheduler(gptoss_model_t model, const SchedulerConfig& config, Metrics& metrics);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  std::shared_ptr<Job> submit(GenerationSpec spec);
  // Stops accepting jobs; the ones accepted run to their end.
  void drain();
  // Cancels every job, queued or running (a forced shutdown).
  void cancel_all();
  // Nothing queued or running.
  bool idle() const;
  EngineGauges gauges() const;
  const SchedulerConfig& config() const { return config_; }
  gptoss_tokenizer_t tokenizer() const { return tokenizer_.get(); }

 private:
  void run();
  void take_new_jobs(std::unique_lock<std::mutex>& lock);
  void drop_cancelled();
  void admit();
  bool place(Sequence& seq);
  void step();
  bool free_pages_for(const std::vector<Sequence*>& batch);
  void preempt(Sequence& seq);
  void retire(std::unique_ptr<Sequence> seq);
  size_t free_tokens() const;

  gptoss_model_t model_;
  SchedulerConfig config_;
  Metrics& metrics_;
  gptoss::tokenizer tokenizer_;
  gptoss::kvcache kv_;
  size_t kv_pages_total_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> inbox_;
  bool stopping_ = false;
  bool draining_ = false;
  std::atomic<bool> cancel_all_{false};
  std::atomic<size_t> queued_{0};   // inbox + waiting
  std::atomic<size_t> running_count_{0};
  std::atomic<size_t> cached_count_{0};
  std::atomic<size_t> kv_free_tokens_{0};

  // Scheduler thread only.
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;
  PrefixCache cache_;
  uint64_t next_admission_ = 0;
  std::thread thread_;
};

}  // namespace gptoss_server
