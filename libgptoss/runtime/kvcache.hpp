#pragma once
// Paged KV memory of one model. Two page groups: full-attention layers keep every position;
// sliding-window layers keep only what the window (plus one prefill chunk) still needs, so
// long contexts cost memory in the full-attention layers only. A page holds
// GPTOSS_KV_PAGE_SIZE positions of every layer of its group, K and V.
//
// The memory itself is the backend's: one cache per device and group (kv_create), in the
// backend's own layout, holding that device's layers of the group. The pool keeps the page
// lists and grows the caches as pages are first needed (doubling, up to the capacity), so a
// context of 131072 tokens costs device memory only for the positions it reaches.
//
// The pool also owns the streams and step arenas of the contexts drawing on it (StepRunner):
// they run in the same forward steps.
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "gptoss.h"
#include "libgptoss/runtime/model.hpp"

namespace gptoss {

class StepRunner;

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
  size_t max_sequences() const { return max_sequences_; }
  // Most positions one sequence can hold (sizes page tables).
  size_t max_tokens_per_sequence() const { return max_tokens_per_sequence_; }
  PageGroup group_of(uint32_t layer) const;

  // Where layer `l` keeps its K and V: the model device, the cache, the layer's index in it.
  struct LayerKv {
    uint32_t device;
    gptoss_backend_kv_t kv;
    uint32_t index;
  };
  const LayerKv& layer(uint32_t l) const { return layers_[l]; }

  // Returns -1 when the group has no free page. Throws insufficient_memory when the backend
  // cannot grow its caches to hold the page.
  int32_t alloc_page(PageGroup g);
  void free_page(PageGroup g, int32_t page);
  size_t free_pages(PageGroup g) const;  // of the capacity, grown or not
  size_t total_pages(PageGroup g) const { return pages_[int(g)]; }
  size_t committed_pages(PageGroup g) const;  // what the caches hold now
  // Pages one sequence can need at most in the sliding group.
  size_t sliding_pages_per_sequence() const;

  // Streams, events and step arenas of the contexts drawing on this pool.
  StepRunner& runner() const { return *runner_; }

  static size_t bytes_per_token(const ModelConfig& c, uint32_t num_layers, gptoss_kv_dtype dtype);

 private:
  struct Cache {
    uint32_t device;
    PageGroup group;
    gptoss_backend_kv_t kv;
  };
  void create_caches();
  void destroy_caches();
  void grow_locked(PageGroup g);

  std::shared_ptr<const Model> model_;
  gptoss_kv_dtype dtype_;
  size_t max_chunk_;
  size_t max_sequences_;
  size_t max_tokens_per_sequence_ = 0;
  size_t pages_[2] = {0, 0};
  size_t committed_[2] = {0, 0};
  std::vector<Cache> caches_;
  std::vector<LayerKv> layers_;
  mutable std::mutex mutex_;
  std::vector<int32_t> free_[2];  // committed pages not in use; the lowest at the back
  std::unique_ptr<StepRunner> runner_;
};

}  // namespace gptoss
