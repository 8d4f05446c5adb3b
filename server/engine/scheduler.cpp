#include "engine/scheduler.hpp"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace gptoss_server {
namespace {
constexpr size_t kPage = GPTOSS_KV_PAGE_SIZE;
// Most tokens of one context per forward step: a shared pool's sliding-window pages are sized
// for chunks of this many tokens (gptoss_kvcache_create).
constexpr size_t kMaxChunk = 512;
}  // namespace

Scheduler::Scheduler(gptoss_model_t model, const SchedulerConfig& config, Metrics& metrics)
    : model_(model), config_(config), metrics_(metrics), cache_(config.prefix_cache_entries) {
  if (config_.max_running == 0) throw std::invalid_argument("max_running must be at least 1");
  if (config_.step_tokens <= config_.max_running)
    throw std::invalid_argument("the step token budget (" + std::to_string(config_.step_tokens) +
                                ") must exceed max_running (" + std::to_string(config_.max_running) +
                                ") so that prompts progress while sequences decode");
  if (config_.context_length > config_.kv_tokens)
    throw std::invalid_argument("the context length (" + std::to_string(config_.context_length) +
                                ") exceeds the KV cache capacity (" + std::to_string(config_.kv_tokens) + " tokens)");
  gptoss_tokenizer_t tokenizer = nullptr;
  gptoss::check(gptoss_model_get_tokenizer(model, &tokenizer), "gptoss_model_get_tokenizer");
  tokenizer_.reset(tokenizer);
  gptoss_kvcache_options ko;
  gptoss::check(gptoss_kvcache_options_init(&ko), "gptoss_kvcache_options_init");
  ko.capacity_tokens = config_.kv_tokens;
  ko.max_sequences = config_.max_running + config_.prefix_cache_entries;
  ko.dtype = config_.kv_dtype;
  kv_ = gptoss::kvcache::create(model, ko);
  kv_pages_total_ = free_tokens() / kPage;
  kv_free_tokens_.store(free_tokens());
  thread_ = std::thread([this] { run(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::shared_ptr<Job> Scheduler::submit(GenerationSpec spec) {
  std::lock_guard lock(mutex_);
  if (stopping_ || draining_) throw NotAccepting(stopping_ ? "stopping" : "draining");
  // At most max_running + max_queue jobs in the server. Jobs still in the inbox count as
  // queued until the scheduler thread admits them, so the free running slots count as room:
  // otherwise a burst on an idle server would fill the queue before any job could run.
  const size_t running = std::min(running_count_.load(), config_.max_running);
  if (queued_.load() >= config_.max_queue + (config_.max_running - running))
    throw QueueFull("the queue is full (" + std::to_string(config_.max_queue) + " requests waiting)");
  auto job = std::make_shared<Job>(std::move(spec));
  inbox_.push_back(job);
  ++queued_;
  wake_.notify_all();
  return job;
}

void Scheduler::drain() {
  std::lock_guard lock(mutex_);
  draining_ = true;
}

void Scheduler::cancel_all() {
  std::lock_guard lock(mutex_);
  draining_ = true;
  for (auto& job : inbox_) job->cancel();
  cancel_all_.store(true);
  wake_.notify_all();
}

bool Scheduler::idle() const { return queued_.load() == 0 && running_count_.load() == 0; }

EngineGauges Scheduler::gauges() const {
  EngineGauges g;
  g.queued = queued_.load();
  g.running = running_count_.load();
  g.kv_pages_total = kv_pages_total_;
  g.kv_pages_used = kv_pages_total_ - std::min(kv_pages_total_, kv_free_tokens_.load() / kPage);
  g.prefix_cache_entries = cached_count_.load();
  return g;
}

size_t Scheduler::free_tokens() const { return kv_.free_tokens(); }

void Scheduler::run() {
  for (;;) {
    std::deque<std::shared_ptr<Job>> fresh;
    {
      std::unique_lock lock(mutex_);
      if (running_.empty() && waiting_.empty() && inbox_.empty()) {
        // Idle: give the step buffers of the last burst back to the system (the forward step
        // allocates its batch's logits anew each time, and glibc keeps what it freed).
        lock.unlock();
        malloc_trim(0);
        lock.lock();
      }
      wake_.wait(lock, [&] { return stopping_ || !inbox_.empty() || !running_.empty() || !waiting_.empty(); });
      if (stopping_) break;
      fresh.swap(inbox_);
    }
    for (auto& job : fresh) {
      try {
        waiting_.push_back(std::make_unique<Sequence>(job, tokenizer_.get(), config_.context_length,
                                                      metrics_, config_.speculation));
      } catch (const gptoss::error& e) {
        --queued_;
        job->finish({FinishReason::error, e.what(), {}});
      }
    }
    drop_cancelled();
    admit();
    if (!running_.empty()) step();
    running_count_.store(running_.size());
    cached_count_.store(cache_.size());
    kv_free_tokens_.store(free_tokens());
  }
  // Shutting down: whatever is left ends as cancelled.
  std::lock_guard lock(mutex_);
  for (auto& job : inbox_) job->finish({FinishReason::cancelled, {}, {}});
  for (auto& seq : waiting_) seq->finish(FinishReason::cancelled);
  for (auto& seq : running_) seq->finish(FinishReason::cancelled);
}

void Scheduler::drop_cancelled() {
  if (cancel_all_.load()) {
    for (auto& seq : waiting_) seq->job().cancel();
    for (auto& seq : running_) seq->job().cancel();
  }
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (!(*it)->job().cancelled()) {
      ++it;
      continue;
    }
    --queued_;  // before the job's end is seen, so its client's next request finds room
    (*it)->finish(FinishReason::cancelled);
    it = waiting_.erase(it);
  }
  for (auto it = running_.begin(); it != running_.end();) {
    if (!(*it)->job().cancelled()) {
      ++it;
      continue;
    }
    (*it)->finish(FinishReason::cancelled);
    it = running_.erase(it);  // releasing the context frees its pages now
  }
}

void Scheduler::admit() {
  while (!waiting_.empty() && running_.size() < config_.max_running) {
    Sequence& seq = *waiting_.front();
    if (seq.job().spec().max_tokens == 0) {
      --queued_;
      seq.finish(FinishReason::length);
      waiting_.pop_front();
      continue;
    }
    try {
      if (!place(seq)) return;  // no room until running sequences finish
    } catch (const gptoss::error& e) {
      --queued_;
      seq.finish(FinishReason::error, e.what());
      waiting_.pop_front();
      continue;
    }
    seq.admitted = next_admission_++;
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
    running_count_.store(running_.size());  // before queued_ drops, so idle() never lies
    --queued_;
  }
}

// Gives `seq` a context: a cached one that shares a prefix with its tokens (truncated to it),
// or a new one. False, leaving everything as it was, when the pool has no room for its
// tokens while other sequences run.
bool Scheduler::place(Sequence& seq) {
  const auto& tokens = seq.tokens();
  size_t shared = 0;
  auto entry = cache_.take(tokens, &shared);
  const size_t need = tokens.size() - (entry ? shared : 0) + kPage * (running_.size() + 1);
  while (free_tokens() < need && cache_.evict_one()) {
  }
  if (free_tokens() < need && !running_.empty()) {
    if (entry) cache_.put(std::move(*entry));
    return false;
  }
  if (entry) {
    gptoss::context ctx = std::move(entry->context);
    // Keep the shared prefix (at least one token to process, which gives the logits); the
    // library resumes where the sliding-window KV is still held: the last shared token, the
    // checkpoint at the end of the cached prompt, or the start.
    size_t keep = shared;
    if (keep == entry->tokens.size() && keep == tokens.size()) --keep;
    ctx.truncate(keep);
    const size_t processed = gptoss::num_processed_tokens(ctx.get());
    // What is not reused is appended again chunk by chunk, under the step budget.
    if (processed + 1 < keep) {
      keep = processed + 1;
      ctx.truncate(keep);
    }
    seq.context = std::move(ctx);
    seq.appended = keep;
    seq.processed = processed;
  } else {
    gptoss_context_options o;
    gptoss::check(gptoss_context_options_init(&o), "gptoss_context_options_init");
    o.context_length = config_.context_length;
    o.kvcache = kv_.get();
    o.max_batch_tokens = std::min(config_.step_tokens, kMaxChunk);
    seq.context = gptoss::context::create(model_, &o);
    seq.appended = seq.processed = 0;
  }
  if (!seq.ever_admitted) {
    seq.ever_admitted = true;
    seq.usage().cached_tokens = seq.processed;
    metrics_.add_tokens(seq.prompt_size(), seq.processed, 0);
  }
  return true;
}

void Scheduler::step() {
  std::vector<Sequence*> batch;
  size_t budget = config_.step_tokens;
  // Decode tokens first: every sequence whose tokens are all appended has one pending.
  for (auto& s : running_)
    if (s->appended == s->tokens().size() && s->appended > s->processed) {
      batch.push_back(s.get());
      budget -= std::min(budget, s->appended - s->processed);
    }
  // Drafts: what the decode tokens left of the budget, at most half of it while prompts wait,
  // in admission order; the speculator drafts as many as pay, up to that.
  if (config_.speculation.on) {
    const bool prompts_wait = std::any_of(running_.begin(), running_.end(), [](const auto& s) {
      return s->appended < s->tokens().size();
    });
    size_t for_drafts = prompts_wait ? budget / 2 : budget;
    for (Sequence* s : batch) {
      try {
        const size_t n = s->draft(std::min<size_t>(for_drafts, config_.speculation.draft_max));
        for_drafts -= n;
        budget -= n;
      } catch (const gptoss::error& e) {
        s->finish(FinishReason::error, e.what());
      }
    }
  }
  // Then prompt chunks, in admission order.
  for (auto& s : running_) {
    if (s->appended == s->tokens().size()) continue;
    const size_t pending = s->appended - s->processed;
    const size_t room = std::min(budget, kMaxChunk);
    if (room <= pending) {
      if (pending > 0 && batch.empty()) batch.push_back(s.get());
      continue;
    }
    const size_t n = std::min(s->tokens().size() - s->appended, room - pending);
    try {
      s->append(n);
    } catch (const gptoss::error& e) {
      s->finish(FinishReason::error, e.what());
      continue;
    }
    batch.push_back(s.get());
    budget -= n + pending;
  }
  std::erase_if(batch, [](Sequence* s) { return s->finished(); });
  if (batch.empty()) {
    std::erase_if(running_, [](const auto& s) { return s->finished(); });
    return;
  }

  std::vector<gptoss_context_t> contexts;
  for (Sequence* s : batch) contexts.push_back(s->context.get());
  size_t step_tokens = 0;
  for (Sequence* s : batch) step_tokens += gptoss::num_tokens(s->context.get()) - s->processed;
  const auto start = std::chrono::steady_clock::now();
  const gptoss_status status = gptoss_contexts_process(contexts.data(), contexts.size());
  metrics_.observe_step(batch.size(), step_tokens,
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (status != gptoss_status_success)
    for (Sequence* s : batch) s->drop_draft();
  if (status == gptoss_status_insufficient_resources) {
    if (!free_pages_for(batch)) {
      const std::string message = gptoss_get_last_error_message();
      for (Sequence* s : batch) s->finish(FinishReason::error, "KV cache: " + message);
    }
    std::erase_if(running_, [](const auto& s) { return s->finished(); });
    return;
  }
  if (status != gptoss_status_success) {
    const std::string message = std::string("forward pass failed: ") + gptoss_status_to_string(status) + ": " +
                                gptoss_get_last_error_message();
    spdlog::error("{} ({} sequences in the step end with an error)", message, batch.size());
    for (Sequence* s : batch) s->finish(FinishReason::error, message);
    std::erase_if(running_, [](const auto& s) { return s->finished(); });
    return;
  }

  for (Sequence* s : batch) {
    const size_t before = s->processed;
    s->processed = s->appended;
    try {
      // The window before the end of the prompt stays, for the next turn's prefix reuse.
      if (before < s->prompt_size() && s->processed >= s->prompt_size())
        gptoss::check(gptoss_context_set_checkpoint(s->context.get(), s->prompt_size()),
                      "gptoss_context_set_checkpoint");
      if (s->appended == s->tokens().size()) s->advance();
    } catch (const gptoss::error& e) {
      s->finish(FinishReason::error, e.what());
    }
  }
  for (auto it = running_.begin(); it != running_.end();) {
    if (!(*it)->finished()) {
      ++it;
      continue;
    }
    retire(std::move(*it));
    it = running_.erase(it);
  }
}

// Makes room after a step ran out of KV pages: a prefix-cache entry goes first, then the most
// recently admitted running sequence. False when nothing can be freed.
bool Scheduler::free_pages_for(const std::vector<Sequence*>& batch) {
  if (cache_.evict_one()) return true;
  if (running_.size() <= 1) return false;
  auto newest = std::max_element(running_.begin(), running_.end(),
                                 [](const auto& a, const auto& b) { return a->admitted < b->admitted; });
  spdlog::debug("KV cache full: preempting a sequence of {} tokens ({} in the step)", (*newest)->tokens().size(),
                batch.size());
  preempt(**newest);
  ++queued_;
  waiting_.push_front(std::move(*newest));
  running_.erase(newest);
  return true;
}

void Scheduler::preempt(Sequence& seq) {
  seq.context.reset();
  seq.appended = seq.processed = 0;
  metrics_.count_preemption();
}

void Scheduler::retire(std::unique_ptr<Sequence> seq) {
  // A sequence that ended normally keeps its KV for prefix reuse; all of its tokens are
  // processed (the last sampled one was never appended).
  if (!seq->context || !seq->ended_normally()) return;
  PrefixCache::Entry entry;
  entry.tokens.assign(seq->tokens().begin(), seq->tokens().begin() + std::ptrdiff_t(seq->processed));
  entry.checkpoint = seq->prompt_size();
  entry.context = std::move(seq->context);
  cache_.put(std::move(entry));
}

}  // namespace gptoss_server
