#pragma once
// Internal types of the CPU backend plugin.
#include <cstddef>
#include <cstdint>
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

// One CPU device: a thread pool and an instruction-set level. With GPTOSS_CPU_DEVICES=N the
// plugin offers N of them, each with the whole thread count: a model split over them runs
// its devices one after another (the core's steps are sequential, and every op here is
// synchronous), so each device may use every core while it runs.
struct Device {
  Device(unsigned threads, Isa isa_) : pool(threads), isa(isa_), kernels(&kernels_for(isa_)) {}
  ThreadPool pool;
  Isa isa;                 // Isa::scalar runs the reference ops (ref_* of ops.hpp)
  const Kernels* kernels;
  // gptoss_precision_fast: MXFP4 matmuls take int8-quantized activations where the level has
  // the kernels for it (kernels->matmul_mxfp4_q8); exact keeps every matmul in fp32.
  bool quantize_activations = true;
  // A weight was uploaded in a layout only the fast precision reads (Weight::q8_0_lanes,
  // Weight::mxfp4_lanes).
  bool fast_layouts = false;
  OpProfile profile;
  std::mutex alloc_mutex;
  std::unordered_map<void*, size_t> mapped;  // live buffers (anonymous mappings) and sizes
};

// Ops are synchronous: a stream only names its device.
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
  int32_t first_expert = 0;  // expert tensors: the layer's index of shape[0]'s first expert
  // The unembedding: its outputs are the logits, which feed the sampler and no later layer.
  bool logits_only = false;
  // bf16 rows repacked at upload into tiles of 16 rows (rows % 16 == 0, cols even), column
  // pairs of the 16 rows interleaved: element (r, k) at data[(r / 16) * 16 * cols +
  // 32 * (k / 2) + 2 * (r % 16) + k % 2] (Kernels::matmul_bf16_lanes; decode_row reads it too).
  bool bf16_lanes = false;
  // Q8_0 rows repacked at upload into tiles of 16 rows (rows % 16 == 0): tile i, at the bytes of
  // rows 16i .. 16i + 15, holds its blocks in order, 544 bytes each: 16 vectors of 32 int8
  // (vector p: elements 2p and 2p + 1 of the block of each of the 16 rows, row r at bytes 2r
  // and 2r + 1), then the 16 rows' f16 steps (Kernels::matmul_q8_0_lanes_q16; decode_row reads
  // it too).
  bool q8_0_lanes = false;
  // MXFP4 experts repacked at upload into tiles of 16 rows (rows % 16 == 0): tile i's codes at
  // data + i * 16 * row_bytes, its scales at scales + i * 16 * (cols / 32), both with their
  // blocks in the order of mxfp4_lanes_pos (formats.hpp has the layout;
  // Kernels::matmul_mxfp4_lanes_q8 reads it, decode_row too).
  bool mxfp4_lanes = false;
  std::vector<uint8_t> owned_data, owned_scales;  // tests' weights
  std::shared_ptr<void> owned_map;  // a copy made at upload: data then scales, huge pages
};

// A KV cache: per layer a K and a V region of max_pages * page_size slots of kv_dim
// elements, reserved up front as lazily backed memory, so growing it moves nothing.
struct KvCache {
  gptoss_kv_dtype dtype;
  uint32_t n_layers;
  uint32_t n_kv_heads, head_dim;
  size_t kv_dim;       // elements per slot: n_kv_heads * head_dim
  size_t page_size;
  size_t max_pages;
  size_t pages;        // usable now
  size_t region_bytes; // one layer's K (or V)
  uint8_t* base;
  void* k(uint32_t layer) const { return base + (2 * size_t(layer)) * region_bytes; }
  void* v(uint32_t layer) const { return base + (2 * size_t(layer) + 1) * region_bytes; }
};

// Tiles [i0, i1) of 16 rows of a row-major bf16 matrix of `cols` (even) columns into the
// bf16_lanes layout (Weight::bf16_lanes).
void repack_bf16_lanes(const uint16_t* src, size_t cols, size_t i0, size_t i1, uint16_t* dst);

// Decodes row `row` of `w` (cols values) into out.
void decode_row(const Weight& w, size_t row, float* out);
// Decodes columns [c0, c0 + n) of row `row` of `w` into out (a bias slice for one piece of a
// matmul's output rows; f32/bf16/f16 directly, other dtypes through a whole-row decode).
void decode_row_range(const Weight& w, size_t row, size_t c0, size_t n, float* out);

// The message of the calling thread's last failure (gptoss_backend_api::last_error).
void set_last_error(std::string message);
const char* last_error_message();

// The plugin's function table (cpu_slots.cpp) and the host's (set by gptoss_backend_init).
extern const gptoss_backend_api kApi;
extern const gptoss_host_api* g_host;

}  // namespace gptoss::cpu
