#include "libgptoss/runtime/kvcache.hpp"

#include "libgptoss/common/error.hpp"

namespace gptoss {

static size_t elem_size(gptoss_kv_dtype d) { return d == gptoss_kv_dtype_f32 ? 4 : 2; }

size_t KvPool::bytes_per_token(const ModelConfig& c, uint32_t num_layers, gptoss_kv_dtype dtype) {
  size_t full = 0;
  for (uint32_t l = 0; l < num_layers; ++l)
    if (!c.layer_is_sliding[l]) ++full;
  return full * 2 * size_t(c.num_kv_heads) * c.head_dim * elem_size(dtype);
}

PageGroup KvPool::group_of(uint32_t layer) const {
  return model_->config().layer_is_sliding[layer] ? PageGroup::sliding : PageGroup::full;
}

size_t KvPool::checkpoint_pages() const {
  return (model_->config().sliding_window + kPageSize - 1) / kPageSize + 1;
}

size_t KvPool::sliding_pages_per_sequence() const {
  const size_t window = model_->config().sliding_window;
  return (window - 1 + max_chunk_ + kPageSize - 1) / kPageSize + 1 + checkpoint_pages();
}

KvPool::KvPool(std::shared_ptr<const Model> model, size_t capacity_tokens, size_t max_sequences,
               size_t max_chunk, gptoss_kv_dtype dtype)
    : model_(std::move(model)), dtype_(dtype), max_chunk_(max_chunk) {
  if (capacity_tokens == 0) fail(gptoss_status_invalid_argument, "KV capacity must be > 0 tokens");
  if (max_sequences == 0) fail(gptoss_status_invalid_argument, "max_sequences must be > 0");
  if (max_chunk == 0) fail(gptoss_status_invalid_argument, "max_batch_tokens must be > 0");
  if (dtype != gptoss_kv_dtype_f32 && dtype != gptoss_kv_dtype_bf16)
    fail(gptoss_status_invalid_argument, "unknown KV dtype {}", int(dtype));
  const auto& c = model_->config();
  const size_t max_ctx = c.max_context_length;
  if (capacity_tokens > max_ctx * max_sequences)
    capacity_tokens = max_ctx * max_sequences;  // more could never be used
  pages_[int(PageGroup::full)] = (capacity_tokens + kPageSize - 1) / kPageSize;
  pages_[int(PageGroup::sliding)] = sliding_pages_per_sequence() * max_sequences;
  for (int g = 0; g < 2; ++g) {
    free_[g].reserve(pages_[g]);
    for (size_t p = pages_[g]; p-- > 0;) free_[g].push_back(int32_t(p));
  }
  const size_t kv_dim = size_t(c.num_kv_heads) * c.head_dim;
  const auto& dev = model_->device();
  const uint32_t n = model_->num_layers();
  k_.assign(n, nullptr);
  v_.assign(n, nullptr);
  try {
    for (uint32_t l = 0; l < n; ++l) {
      const size_t bytes = pages_[int(group_of(l))] * kPageSize * kv_dim * elem_size(dtype);
      dev.check(dev.api().buffer_alloc(dev.dev(), bytes, &k_[l]), "KV cache allocation");
      dev.check(dev.api().buffer_alloc(dev.dev(), bytes, &v_[l]), "KV cache allocation");
    }
  } catch (...) {
    for (uint32_t l = 0; l < n; ++l) {
      if (k_[l]) dev.api().buffer_free(dev.dev(), k_[l]);
      if (v_[l]) dev.api().buffer_free(dev.dev(), v_[l]);
    }
    throw;
  }
}

KvPool::~KvPool() {
  const auto& dev = model_->device();
  for (size_t l = 0; l < k_.size(); ++l) {
    dev.api().buffer_free(dev.dev(), k_[l]);
    dev.api().buffer_free(dev.dev(), v_[l]);
  }
}

int32_t KvPool::alloc_page(PageGroup g) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& f = free_[int(g)];
  if (f.empty()) return -1;
  const int32_t p = f.back();
  f.pop_back();
  return p;
}

void KvPool::free_page(PageGroup g, int32_t page) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_[int(g)].push_back(page);
}

size_t KvPool::free_pages(PageGroup g) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return free_[int(g)].size();
}

}  // namespace gptoss
