#include "libgptoss/runtime/context.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "libgptoss/common/error.hpp"
#include "libgptoss/runtime/forward.hpp"
#include "libgptoss/runtime/step_runner.hpp"

namespace gptoss {

Context::Context(std::shared_ptr<const Model> model, std::shared_ptr<KvPool> pool,
                 size_t max_tokens, size_t max_batch_tokens)
    : model_(std::move(model)), pool_(std::move(pool)), max_tokens_(max_tokens),
      max_batch_tokens_(std::min(max_batch_tokens, pool_->max_chunk())) {
  if (max_tokens_ == 0 || max_tokens_ > model_->config().max_context_length)
    fail(gptoss_status_invalid_argument, "context length {} out of range (1..{})", max_tokens_,
         model_->config().max_context_length);
  if (max_batch_tokens_ == 0) fail(gptoss_status_invalid_argument, "max_batch_tokens must be > 0");
  const BackendDevice& out = model_->device(model_->placement().output_device());
  logits_buf_ = out.alloc(size_t(model_->config().vocab_size) * 4, "logits buffer allocation");
}

Context::~Context() {
  release_pages_from(PageGroup::full, 0);
  release_pages_from(PageGroup::sliding, 0);
  model_->device(model_->placement().output_device()).free(logits_buf_);
}

void Context::append(std::span<const uint32_t> tokens) {
  if (tokens.size() > max_tokens_ - tokens_.size())
    fail(gptoss_status_context_overflow,
         "{} tokens would not fit: the context holds {} of at most {} tokens", tokens.size(),
         tokens_.size(), max_tokens_);
  const uint32_t vocab = model_->config().vocab_size;
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] >= vocab)
      fail(gptoss_status_invalid_argument, "token {} (at index {}) is outside the vocabulary of {}",
           tokens[i], i, vocab);
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  if (!tokens.empty()) {
    logits_state_ = LogitsState::none;
    cancel_kept_rows();
  }
}

void Context::release_pages_from(PageGroup g, size_t first_page) {
  auto& pages = pages_[int(g)];
  for (size_t i = first_page; i < pages.size(); ++i)
    if (pages[i] >= 0) pool_->free_page(g, pages[i]);
  if (first_page < pages.size()) pages.resize(first_page);
}

void Context::prepare_pages(size_t p0, size_t p1) {
  const size_t P = KvPool::kPageSize;
  const size_t window = model_->config().sliding_window;
  // Sliding group: pages wholly before the first position a query in [p0, p1) can see.
  auto& sl = pages_[int(PageGroup::sliding)];
  const size_t first_visible = p0 + 1 > window ? p0 + 1 - window : 0;
  for (size_t i = 0; i < sl.size() && (i + 1) * P <= first_visible; ++i)
    if (sl[i] >= 0 && !pinned(i)) {
      pool_->free_page(PageGroup::sliding, sl[i]);
      sl[i] = -1;
    }
  for (int g = 0; g < 2; ++g) {
    auto& pages = pages_[g];
    const size_t need = (p1 + P - 1) / P;
    if (pages.size() < need) pages.resize(need, -1);
    const size_t from = g == int(PageGroup::sliding) ? first_visible / P : 0;
    for (size_t i = from; i < need; ++i) {
      if (pages[i] >= 0) continue;
      pages[i] = pool_->alloc_page(PageGroup(g));
      if (pages[i] < 0)
        fail(gptoss_status_insufficient_resources,
             "KV cache is full ({} pages of {} tokens in the {} group, none free)",
             pool_->total_pages(PageGroup(g)), P, g == 0 ? "full-attention" : "sliding-window");
    }
  }
}

void Context::process() {
  Context* self = this;
  process_all(std::span<Context* const>(&self, 1));
}

void Context::process_all(std::span<Context* const> contexts) { run_steps(contexts, nullptr); }

// `request`, if any, samples the last logits of contexts[0] (a single context) on the device.
void Context::run_steps(std::span<Context* const> contexts, const SampleRequest* request) {
  if (contexts.empty()) return;
  for (Context* c : contexts) {
    if (c == nullptr) fail(gptoss_status_invalid_argument, "context must not be NULL");
    if (c->model_ != contexts[0]->model_)
      fail(gptoss_status_invalid_argument, "contexts processed together must share one model");
  }
  for (size_t i = 0; i < contexts.size(); ++i)
    for (size_t j = i + 1; j < contexts.size(); ++j)
      if (contexts[i] == contexts[j])
        fail(gptoss_status_invalid_argument, "the same context appears twice in one batch");
  // Contexts drawing on one pool run in the same forward steps.
  std::map<KvPool*, std::vector<Context*>> by_pool;
  for (Context* c : contexts) by_pool[c->pool_.get()].push_back(c);
  const uint32_t V = contexts[0]->model_->config().vocab_size;
  for (auto& [pool, group] : by_pool) {
    for (;;) {
      std::vector<SequenceChunk> chunks;
      for (Context* c : group) {
        const size_t p0 = c->n_processed_, total = c->tokens_.size(), rows = c->keep_rows_;
        if (p0 >= total) continue;
        size_t p1 = std::min(total, p0 + c->max_batch_tokens_);
        // Kept rows come from one step: the one before it stops short of them.
        if (rows > 0 && p1 < total) p1 = p0 + std::min(c->max_batch_tokens_, total - p0 - rows);
        SequenceChunk chunk{c, p0, p1, p1 == total, p1 == total ? request : nullptr};
        if (rows > 0 && p1 == total) {
          c->kept_rows_.resize(rows * V);
          chunk.sample = nullptr;
          chunk.logit_rows = rows;
          chunk.host_rows = c->kept_rows_.data();
        }
        chunks.push_back(chunk);
      }
      if (chunks.empty()) break;
      run_forward_step(*pool, chunks);
      for (const SequenceChunk& ch : chunks)
        if (ch.host_rows != nullptr) ch.context->keep_rows_ = 0;  // kept_rows_ holds them
    }
  }
}

void Context::keep_rows(size_t rows) {
  const size_t pending = tokens_.size() - n_processed_;
  if (rows > pending || rows > max_batch_tokens_)
    fail(gptoss_status_internal, "keep_rows: {} rows of {} pending tokens (batch {})", rows,
         pending, max_batch_tokens_);
  kept_rows_.clear();
  keep_rows_ = rows;
}

std::vector<float> Context::take_kept_rows() {
  std::vector<float> rows;
  if (keep_rows_ == 0) rows.swap(kept_rows_);
  return rows;
}

void Context::rollback(size_t n, std::span<const float> last_logits) {
  const size_t V = model_->config().vocab_size;
  if (n == 0 || n > n_processed_ || n_processed_ != tokens_.size() || last_logits.size() != V)
    fail(gptoss_status_internal, "rollback to {} with {} of {} tokens processed", n, n_processed_,
         tokens_.size());
  cancel_kept_rows();
  if (n == tokens_.size()) return;
  if (!window_held(n)) {
    truncate(n);
    return;
  }
  tokens_.resize(n);
  n_processed_ = n;
  if (checkpoint_ > n) checkpoint_ = 0;
  const size_t P = KvPool::kPageSize;
  // The partly kept page keeps its stale positions past n: the next step overwrites them
  // before any query can see them.
  release_pages_from(PageGroup::full, (n + P - 1) / P);
  release_pages_from(PageGroup::sliding, (n + P - 1) / P);
  // Both copies of the logits: sampling on the device reads logits_buf_.
  const uint32_t out = model_->placement().output_device();
  const BackendDevice& dev = model_->device(out);
  const gptoss_backend_stream_t s = pool_->runner().stream(out);
  logits_state_ = LogitsState::none;
  dev.check(dev.api().buffer_write(s, logits_buf_, 0, last_logits.data(), V * 4), "logits write");
  dev.check(dev.api().stream_synchronize(s), "logits write");
  logits_.assign(last_logits.begin(), last_logits.end());
  logits_state_ = LogitsState::on_host;
}

const std::vector<float>& Context::host_logits() {
  if (logits_state_ == LogitsState::none)
    fail(gptoss_status_invalid_state, "no logits: the last token has not been processed");
  if (logits_state_ == LogitsState::on_device) {
    const uint32_t out = model_->placement().output_device();
    const BackendDevice& dev = model_->device(out);
    logits_.resize(model_->config().vocab_size);
    dev.check(dev.api().buffer_read(pool_->runner().stream(out), logits_buf_, 0, logits_.data(),
                                    logits_.size() * 4),
              "logits read");
    logits_state_ = LogitsState::on_host;
  }
  return logits_;
}

bool Context::samples_on_device(const Sampler& sampler) const {
  return GPTOSS_HAS_SLOT(&model_->api(), sample) && !sampler.needs_host_logits();
}

void Context::sample_stored_logits(const SampleRequest& request) {
  const uint32_t out = model_->placement().output_device();
  StepRunner& runner = pool_->runner();
  StepShape one;
  one.logit_rows = 1;
  runner.reserve(one);
  const ArenaViews& v = runner.views(out);
  const BackendDevice& dev = model_->device(out);
  const gptoss_backend_api& api = dev.api();
  const gptoss_backend_stream_t s = runner.stream(out);
  const gptoss_sample_row row = sample_row_for(*request.sampler, request.sampler->peek_uniform());
  const gptoss_sample_shape shape = sample_shape_of(std::span(&row, 1), model_->config().vocab_size);
  try {
    dev.check(api.buffer_write(s, v.sample_rows, 0, &row, sizeof row), "buffer write");
    if (!request.mask.empty())
      dev.check(api.buffer_write(s, v.mask, 0, request.mask.data(), request.mask.size() * 4), "buffer write");
    dev.check(api.sample(s, logits_buf_, v.sample_rows, request.mask.empty() ? nullptr : v.mask,
                         &shape, v.results),
              "sample");
    dev.check(api.buffer_read(s, v.results, 0, request.result, sizeof *request.result),
              "sample results read");
  } catch (...) {
    runner.drain();
    throw;
  }
}

void Context::check_mask(std::span<const uint32_t> mask) const {
  const size_t words = (size_t(model_->config().vocab_size) + 31) / 32;
  if (!mask.empty() && mask.size() != words)
    fail(gptoss_status_invalid_argument, "the token mask has {} words; the vocabulary needs {}",
         mask.size(), words);
}

namespace {
// A backend's sample: the token, after the sampler's state has taken the draw and the
// log-probabilities as the host sampler would have.
uint32_t take_sample(Sampler& sampler, const gptoss_sample_result& result, uint32_t vocab_size) {
  if (result.token == UINT32_MAX)
    fail(gptoss_status_invalid_state, "the token mask allows none of the {} tokens", vocab_size);
  if (sampler.params().temperature > 0.0f) sampler.skip_uniform();
  std::vector<TokenLogprob> top;
  for (uint32_t i = 0; i < std::min<uint32_t>(result.n_top, GPTOSS_SAMPLE_MAX_TOP); ++i)
    top.push_back({result.top[i].token, result.top[i].logprob});
  sampler.record(result.token, result.logprob, std::move(top));
  return result.token;
}
}  // namespace

uint32_t Context::sample(Sampler& sampler, std::span<const uint32_t> mask) {
  if (tokens_.empty()) fail(gptoss_status_invalid_state, "the context has no tokens");
  check_mask(mask);
  cancel_kept_rows();
  if (!samples_on_device(sampler)) {
    process();
    return sampler.sample(host_logits(), tokens_, mask);
  }
  if (n_processed_ == tokens_.size()) {
    if (!has_logits()) fail(gptoss_status_invalid_state, "no logits to sample from");
    return sample_on_device(sampler, mask);
  }
  gptoss_sample_result result{};
  const SampleRequest request{&sampler, mask, &result};
  Context* self = this;
  run_steps(std::span<Context* const>(&self, 1), &request);
  return take_sample(sampler, result, model_->config().vocab_size);
}

uint32_t Context::sample_on_device(Sampler& sampler, std::span<const uint32_t> mask) {
  gptoss_sample_result result{};
  sample_stored_logits(SampleRequest{&sampler, mask, &result});
  return take_sample(sampler, result, model_->config().vocab_size);
}

uint32_t Context::sample_logits(Sampler& sampler, std::span<const float> logits, size_t history,
                                std::span<const uint32_t> mask) {
  const size_t V = model_->config().vocab_size;
  if (logits.size() != V || history > tokens_.size())
    fail(gptoss_status_internal, "sample_logits: {} logits, history {} of {} tokens", logits.size(),
         history, tokens_.size());
  check_mask(mask);
  if (!samples_on_device(sampler))
    return sampler.sample(logits, std::span(tokens_).first(history), mask);
  const uint32_t out = model_->placement().output_device();
  const BackendDevice& dev = model_->device(out);
  const gptoss_backend_stream_t s = pool_->runner().stream(out);
  logits_state_ = LogitsState::none;
  dev.check(dev.api().buffer_write(s, logits_buf_, 0, logits.data(), V * 4), "logits write");
  logits_state_ = LogitsState::on_device;
  return sample_on_device(sampler, mask);
}

void Context::reset() {
  cancel_kept_rows();
  release_pages_from(PageGroup::full, 0);
  release_pages_from(PageGroup::sliding, 0);
  tokens_.clear();
  n_processed_ = 0;
  logits_state_ = LogitsState::none;
  checkpoint_ = 0;
}

bool Context::pinned(size_t sliding_page) const {
  if (checkpoint_ == 0) return false;
  const size_t P = KvPool::kPageSize, window = model_->config().sliding_window;
  const size_t first = checkpoint_ > window ? checkpoint_ - window : 0;
  return sliding_page >= first / P && sliding_page <= (checkpoint_ - 1) / P;
}

bool Context::window_held(size_t pos) const {
  const size_t P = KvPool::kPageSize, window = model_->config().sliding_window;
  const auto& sl = pages_[int(PageGroup::sliding)];
  for (size_t p = pos + 1 > window ? pos + 1 - window : 0; p < pos; p += P - p % P)
    if (p / P >= sl.size() || sl[p / P] < 0) return false;
  return true;
}

void Context::set_checkpoint(size_t position) {
  if (position > tokens_.size())
    fail(gptoss_status_invalid_argument, "checkpoint at {} is past the context's {} tokens",
         position, tokens_.size());
  checkpoint_ = position;
}

void Context::truncate(size_t n) {
  if (n > tokens_.size())
    fail(gptoss_status_invalid_argument, "cannot truncate to {} tokens: the context has {}", n,
         tokens_.size());
  cancel_kept_rows();
  if (n == tokens_.size()) return;
  tokens_.resize(n);
  logits_state_ = LogitsState::none;
  if (n == 0) {
    reset();
    return;
  }
  if (checkpoint_ > n) checkpoint_ = 0;
  // The last kept token is processed again so that its logits exist; its KV is rewritten
  // with the same values.
  n_processed_ = std::min(n_processed_, n - 1);
  const size_t P = KvPool::kPageSize;
  release_pages_from(PageGroup::full, (n + P - 1) / P);
  release_pages_from(PageGroup::sliding, (n + P - 1) / P);
  // Sliding-window keys older than the live window (plus one chunk) are gone unless a
  // checkpoint kept them: resume where they are all present (identical results, more work).
  if (window_held(n_processed_)) return;
  if (checkpoint_ > 0 && checkpoint_ <= n_processed_ && window_held(checkpoint_)) {
    n_processed_ = checkpoint_;
    return;
  }
  n_processed_ = 0;
  release_pages_from(PageGroup::sliding, 0);  // rewritten from the start anyway
}

}  // namespace gptoss
