#include "libgptoss/runtime/kvcache.hpp"

#include <algorithm>

#include "libgptoss/common/error.hpp"
#include "libgptoss/runtime/step_runner.hpp"

namespace gptoss {

namespace {
size_t elem_size(gptoss_kv_dtype d) { return d == gptoss_kv_dtype_f32 ? 4 : 2; }
// Pages a cache starts with (1024 positions), unless the group is smaller.
constexpr size_t kInitialPages = 64;
}  // namespace

size_t KvPool::bytes_per_token(const ModelConfig& c, uint32_t num_layers, gptoss_kv_dtype dtype) {
  size_t full = 0;
  for (uint32_t l = 0; l < num_layers; ++l)
    if (!c.layer_is_sliding[l]) ++full;
  return full * 2 * size_t(c.num_kv_heads) * c.head_dim * elem_size(dtype);
}

PageGroup KvPool::group_of(uint32_t layer) const {
  return model_->config().layer_is_sliding[layer] ? PageGroup::sliding : PageGroup::full;
}

size_t KvPool::sliding_pages_per_sequence() const {
  const size_t window = model_->config().sliding_window;
  return (window - 1 + max_chunk_ + kPageSize - 1) / kPageSize + 1;
}

KvPool::KvPool(std::shared_ptr<const Model> model, size_t capacity_tokens, size_t max_sequences,
               size_t max_chunk, gptoss_kv_dtype dtype)
    : model_(std::move(model)), dtype_(dtype), max_chunk_(max_chunk), max_sequences_(max_sequences) {
  if (capacity_tokens == 0) fail(gptoss_status_invalid_argument, "KV capacity must be > 0 tokens");
  if (max_sequences == 0) fail(gptoss_status_invalid_argument, "max_sequences must be > 0");
  if (max_chunk == 0) fail(gptoss_status_invalid_argument, "max_batch_tokens must be > 0");
  if (dtype != gptoss_kv_dtype_f32 && dtype != gptoss_kv_dtype_bf16)
    fail(gptoss_status_invalid_argument, "unknown KV dtype {}", int(dtype));
  const size_t max_ctx = model_->config().max_context_length;
  if (capacity_tokens > max_ctx * max_sequences)
    capacity_tokens = max_ctx * max_sequences;  // more could never be used
  max_tokens_per_sequence_ = std::min(capacity_tokens, max_ctx);
  pages_[int(PageGroup::full)] = (capacity_tokens + kPageSize - 1) / kPageSize;
  pages_[int(PageGroup::sliding)] = sliding_pages_per_sequence() * max_sequences;
  for (int g = 0; g < 2; ++g) committed_[g] = std::min(pages_[g], kInitialPages);
  create_caches();
  try {
    runner_ = std::make_unique<StepRunner>(*this);
  } catch (...) {
    destroy_caches();
    throw;
  }
  for (int g = 0; g < 2; ++g)
    for (size_t p = committed_[g]; p-- > 0;) free_[g].push_back(int32_t(p));
}

void KvPool::create_caches() {
  const ModelConfig& c = model_->config();
  layers_.resize(model_->num_layers());
  try {
    for (uint32_t d = 0; d < model_->num_devices(); ++d)
      for (PageGroup g : {PageGroup::full, PageGroup::sliding}) {
        std::vector<uint32_t> held;  // this device's layers of the group
        for (uint32_t l = 0; l < model_->num_layers(); ++l)
          if (model_->placement().layer_device[l] == d && group_of(l) == g) held.push_back(l);
        if (held.empty()) continue;
        const uint32_t n = uint32_t(held.size());
        gptoss_kv_desc desc{};
        desc.struct_size = sizeof desc;
        desc.n_layers = n;
        desc.n_kv_heads = c.num_kv_heads;
        desc.head_dim = c.head_dim;
        desc.page_size = uint32_t(kPageSize);
        desc.dtype = dtype_;
        desc.max_pages = pages_[int(g)];
        const BackendDevice& dev = model_->device(d);
        gptoss_backend_kv_t kv = nullptr;
        dev.check(dev.api().kv_create(dev.dev(), &desc, committed_[int(g)], &kv),
                  "KV cache creation");
        caches_.push_back({d, g, kv});
        for (uint32_t i = 0; i < n; ++i) layers_[held[i]] = {d, kv, i};
      }
  } catch (...) {
    destroy_caches();
    throw;
  }
}

void KvPool::destroy_caches() {
  for (const Cache& c : caches_) {
    const BackendDevice& dev = model_->device(c.device);
    dev.api().kv_destroy(dev.dev(), c.kv);
  }
  caches_.clear();
}

KvPool::~KvPool() {
  runner_.reset();  // waits for the streams
  destroy_caches();
}

void KvPool::grow_locked(PageGroup g) {
  const size_t have = committed_[int(g)];
  const size_t want = std::min(pages_[int(g)], std::max(have * 2, have + 1));
  // No step is running on this pool: its steps end synchronised, and pages are taken
  // before a step's first op.
  for (const Cache& c : caches_) {
    if (c.group != g) continue;
    const BackendDevice& dev = model_->device(c.device);
    dev.check(dev.api().kv_grow(dev.dev(), c.kv, want), "KV cache growth");
  }
  committed_[int(g)] = want;
  for (size_t p = want; p-- > have;) free_[int(g)].push_back(int32_t(p));
}

int32_t KvPool::alloc_page(PageGroup g) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& f = free_[int(g)];
  if (f.empty()) {
    if (committed_[int(g)] >= pages_[int(g)]) return -1;
    grow_locked(g);
  }
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
  return free_[int(g)].size() + (pages_[int(g)] - committed_[int(g)]);
}

size_t KvPool::committed_pages(PageGroup g) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return committed_[int(g)];
}

}  // namespace gptoss
