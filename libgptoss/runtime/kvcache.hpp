#pragma once
// Paged KV memory of one model. Two page groups: full-attention layers keep every position;
// sliding-window layers keep only what the window (plus one prefill chunk) still needs, so
// long contexts cost memory in the full-attention layers only. A page holds
// GPTOSS_KV_PAGE_SIZE positions of every layer of its group; each layer has its own K and V
// buffer on the device, indexed by slot = page * page_size + offset.
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "gptoss.h"
#include "libgptoss/runtime/model.hpp"

namespace gptoss {

enum class PageGroup : int { full = 0, sliding = 1 };

class KvPool {
 public:
  static constexpr size_t kPageSize = GPTOSS_KV_PAGE_SIZE;

  // capacity_tokens: full-attention positions across all sequences; max_chunk: most tokens
  // of one sequence in one forward step (sizes the sliding group).
  KvPool(std::shared_ptr<const Model> model, size_t capacity_tokens, size_t max_sequences,
         size_t max_chunk, gptoss_kv_dtype dtype);
  ~KvPool();
  KvPool(const KvPool&) = delete;
  KvPool& operator=(const KvPool&) = delete;

  const Model& model() const { return *model_; }
  gptoss_kv_dtype dtype() const { return dtype_; }
  size_t max_chunk() const { return max_chunk_; }
  PageGroup group_of(uint32_t layer) const;
  void* k(uint32_t layer) const { return k_[layer]; }
  void* v(uint32_t layer) const { return v_[layer]; }

  // Returns -1 when the group has no free page.
  int32_t alloc_page(PageGroup g);
  void free_page(PageGroup g, int32_t page);
  size_t free_pages(PageGroup g) const;
  size_t total_pages(PageGroup g) const { return pages_[int(g)]; }
  // Pages one sequence can need at most in the sliding group: its live window plus one prefill
  // chunk, and the window kept before a checkpoint (Context::set_checkpoint).
  size_t sliding_pages_per_sequence() const;
  // Pages that hold the window before a checkpoint at most.
  size_t checkpoint_pages() const;

  static size_t bytes_per_token(const ModelConfig& c, uint32_t num_layers, gptoss_kv_dtype dtype);

 private:
  std::shared_ptr<const Model> model_;
  gptoss_kv_dtype dtype_;
  size_t max_chunk_;
  size_t pages_[2] = {0, 0};
  std::vector<void*> k_, v_;
  mutable std::mutex mutex_;
  std::vector<int32_t> free_[2];
};

}  // namespace gptoss
