#pragma once
// Internal types of the CPU backend plugin.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "gptoss/backend.h"
#include "kernels.hpp"
#include "op_profile.hpp"
#include "thread_pool.hpp"

namespace gptoss::cpu {

struct Device {
  Device(unsigned threads, Isa isa_) : pool(threads), isa(isa_), kernels(&kernels_for(isa_)) {}
  ThreadPool pool;
  Isa isa;                 // Isa::scalar runs the reference ops (ref_* of ops.hpp)
  const Kernels* kernels;
  // gptoss_precision_fast: MXFP4 matmuls take int8-quantized activations where the level has
  // the kernels for it (kernels->matmul_mxfp4_q8); exact keeps every matmul in fp32.
  bool quantize_activations = true;
  OpProfile profile;
  std::mutex alloc_mutex;
  std::unordered_map<void*, size_t> mapped;  // live buffers (anonymous mappings) and sizes
  std::multimap<size_t, void*> cached;       // freed buffers kept for reuse, by size
  size_t cached_bytes = 0;
  std::string last_error;
};

struct Stream {
  Device* dev;
};

// A weight: canonical tensor, kept in place when the host says its memory persists.
struct Weight {
  gptoss_dtype dtype;
  uint32_t ndim;
  int64_t shape[4];
  size_t rows;       // product of all but the last dimension
  size_t cols;       // last dimension
  size_t row_bytes;  // bytes of one row in `data`
  const uint8_t* data;
  const uint8_t* scales;  // mxfp4: cols/32 bytes per row
  std::vector<uint8_t> owned_data, owned_scales;  // tests' weights
  std::shared_ptr<void> owned_map;  // a copy made at upload: data then scales, huge pages
};

// Decodes row `row` of `w` (cols values) into out.
void decode_row(const Weight& w, size_t row, float* out);
// Decodes columns [c0, c0 + n) of row `row` of `w` into out (a bias slice for one piece of a
// matmul's output rows; f32/bf16/f16 directly, other dtypes through a whole-row decode).
void decode_row_range(const Weight& w, size_t row, size_t c0, size_t n, float* out);

}  // namespace gptoss::cpu
