#pragma once
// Memory of the CPU backend: anonymous mappings for buffers and KV caches, and weights taken
// in place or copied into huge pages.
#include <cstddef>
#include <string>

#include "cpu_backend.hpp"

namespace gptoss::cpu {

size_t page_round(size_t bytes);
// A zeroed anonymous mapping of `bytes` (page-rounded); nullptr when mmap fails.
void* map_buffer(size_t bytes);
// Bytes of one layer's K (or V) region of a cache: max_pages * page_size slots, rounded to
// 2 MiB from that size up so each region starts on a huge page.
size_t kv_region_bytes(const KvCache& kv);
// The layouts the device's kernels read its attention projections (and a Q8_0 unembedding, and
// MXFP4 experts) in, as the repacks into them (null: the rows as they are).
struct UploadRepacks {
  // bf16 projections (Weight::bf16_lanes): the level's Kernels::repack_bf16_lanes.
  decltype(Kernels::repack_bf16_lanes) bf16 = nullptr;
  // Q8_0 projections and unembedding (Weight::q8_0_lanes): the level's
  // Kernels::repack_q8_0_lanes, in the fast precision only (the exact one reads the rows).
  decltype(Kernels::repack_q8_0_lanes) q8_0 = nullptr;
  // MXFP4 experts (Weight::mxfp4_lanes): the level's Kernels::repack_mxfp4_lanes, in the fast
  // precision only.
  decltype(Kernels::repack_mxfp4_lanes) mxfp4 = nullptr;
};
// A Weight for `desc` (the copy, if any, made over `pool`); on failure `why` names the tensor.
gptoss_status make_weight(ThreadPool& pool, const gptoss_tensor_desc& desc,
                          const UploadRepacks& repacks, gptoss_backend_weight_t* out,
                          std::string& why);

}  // namespace gptoss::cpu
