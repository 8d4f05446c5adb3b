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
// A Weight for `desc` (the copy, if any, made over `pool`); on failure `why` names the tensor.
// `repack`: the device's level reads bf16 attention projections repacked (Weight::bf16_lanes)
// and this is its Kernels::repack_bf16_lanes; null: it does not.
using RepackBf16Lanes = decltype(Kernels::repack_bf16_lanes);
gptoss_status make_weight(ThreadPool& pool, const gptoss_tensor_desc& desc, RepackBf16Lanes repack,
                          gptoss_backend_weight_t* out, std::string& why);

}  // namespace gptoss::cpu
