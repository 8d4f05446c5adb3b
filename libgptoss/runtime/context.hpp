#pragma once
// One sequence: its tokens, how many have been processed, its KV pages, its last logits
// (kept on the model's output device; read to the host only when asked for).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "libgptoss/runtime/forward.hpp"
#include "libgptoss/runtime/kvcache.hpp"
#include "libgptoss/runtime/model.hpp"
#include "libgptoss/sampling/sampler.hpp"

namespace gptoss {

class Context {
 public:
  // pool: shared or private; max_tokens: the context length; max_batch_tokens: tokens of
  // this context per forward step (at most pool->max_chunk()).
  Context(std::shared_ptr<const Model> model, std::shared_ptr<KvPool> pool, size_t max_tokens,
          size_t max_batch_tokens);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const Model& model() const { return *model_; }
  const std::shared_ptr<const Model>& model_ptr() const { return model_; }
  KvPool& pool() const { return *pool_; }
  const std::vector<uint32_t>& tokens() const { return tokens_; }
  size_t num_processed() const { return n_processed_; }
  size_t max_tokens() const { return max_tokens_; }
  size_t max_batch_tokens() const { return max_batch_tokens_; }

  // Throws context_overflow (nothing appended) or invalid_argument (id out of range).
  void append(std::span<const uint32_t> tokens);
  void process();
  // Processes several contexts of one model; equal to processing each alone.
  static void process_all(std::span<Context* const> contexts);

  bool has_logits() const { return logits_state_ != LogitsState::none; }
  // The last token's logits, read from the device on first use after a step.
  const std::vector<float>& host_logits();

  // Processes pending tokens, then samples the next token (not appended). On the device when
  // the backend can and the sampler needs no host logits (penalties), else on the host; both
  // give the same token for the same sampler state. `mask`: empty, or (vocab + 31) / 32 words
  // of allowed-token bits (include/gptoss/backend.h). invalid_argument when the mask allows
  // no token or has the wrong size.
  uint32_t sample(Sampler& sampler, std::span<const uint32_t> mask = {});
  // Whether sample() would run on the device for `sampler`.
  bool samples_on_device(const Sampler& sampler) const;

  // Speculative verification (libgptoss/speculative): the next processing that reaches the
  // end of the tokens (process(), or process_all() with other contexts, so that several
  // sequences' drafts verify in one batched step) computes the last `rows` positions
  // (1..max_batch_tokens, at most the pending tokens) in one forward step and keeps their
  // logits, rows * vocab floats, for take_kept_rows(); earlier tokens go in ordinary steps
  // before it. append, truncate, rollback, reset and sample cancel the request.
  void keep_rows(size_t rows);
  // The rows the last processing kept (moved out; empty when none were kept since).
  std::vector<float> take_kept_rows();
  // Samples `logits` as sample() samples the context's last logits when its tokens end at
  // position `history` (penalties over the tokens before it): on the device when sample()
  // would, so that the token and its log-probabilities are the ones plain decoding records.
  // Leaves `logits` as the context's last logits on the device.
  uint32_t sample_logits(Sampler& sampler, std::span<const float> logits, size_t history,
                         std::span<const uint32_t> mask = {});
  // Drops the tokens from position n on, all of whose KV a step computed (a rejected draft),
  // keeping the first n processed: no token is processed again. `last_logits` (vocab floats,
  // those of position n - 1, which the step computed) become the context's logits, as if the
  // step had ended there. Falls back to truncate(n) if the window before n is not held.
  void rollback(size_t n, std::span<const float> last_logits);

  void reset();
  // Keeps n tokens; resumes at n - 1, at the checkpoint, or at 0: the latest position whose
  // sliding-window KV is still held.
  void truncate(size_t n);
  // Keeps the sliding-window KV of the window before `position` while the context grows, so
  // that a truncation to n >= position resumes there at worst. 0 clears it.
  void set_checkpoint(size_t position);

 private:
  friend class ForwardStep;
  enum class LogitsState { none, on_device, on_host };

  // Makes sure KV pages exist for positions [p0, p1) (and the sliding window before p0),
  // releasing sliding pages no later query can see. Throws insufficient_resources.
  void prepare_pages(size_t p0, size_t p1);
  void release_pages_from(PageGroup g, size_t first_page);
  // Whether every sliding page a query at `pos` reads (the window before it) is held.
  bool window_held(size_t pos) const;
  bool pinned(size_t sliding_page) const;
  int32_t page_at(PageGroup g, size_t pos) const { return pages_[int(g)][pos / KvPool::kPageSize]; }
  static void run_steps(std::span<Context* const> contexts, const SampleRequest* request);
  void sample_stored_logits(const SampleRequest& request);
  // sample()'s device path on logits_buf_: the result recorded in the sampler.
  uint32_t sample_on_device(Sampler& sampler, std::span<const uint32_t> mask);
  void check_mask(std::span<const uint32_t> mask) const;
  void cancel_kept_rows() {
    keep_rows_ = 0;
    kept_rows_.clear();
  }

  std::shared_ptr<const Model> model_;
  std::shared_ptr<KvPool> pool_;
  size_t max_tokens_;
  size_t max_batch_tokens_;
  std::vector<uint32_t> tokens_;
  size_t n_processed_ = 0;
  std::vector<int32_t> pages_[2];  // by position / page size; -1 = not held
  gptoss_backend_buffer_t logits_buf_ = nullptr;  // vocab floats on the output device
  LogitsState logits_state_ = LogitsState::none;
  std::vector<float> logits_;  // host copy when on_host
  size_t checkpoint_ = 0;  // 0 = none
  size_t keep_rows_ = 0;   // rows the next processing to the end keeps (keep_rows)
  std::vector<float> kept_rows_;
};

}  // namespace gptoss
