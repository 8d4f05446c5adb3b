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

  void reset();
  void truncate(size_t n);

 private:
  friend class ForwardStep;
  enum class LogitsState { none, on_device, on_host };

  // Makes sure KV pages exist for positions [p0, p1) (and the sliding window before p0),
  // releasing sliding pages no later query can see. Throws insufficient_resources.
  void prepare_pages(size_t p0, size_t p1);
  void release_pages_from(PageGroup g, size_t first_page);
  int32_t page_at(PageGroup g, size_t pos) const { return pages_[int(g)][pos / KvPool::kPageSize]; }
  static void run_steps(std::span<Context* const> contexts, const SampleRequest* request);
  void sample_stored_logits(const SampleRequest& request);

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
};

}  // namespace gptoss
