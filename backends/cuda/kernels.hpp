#pragma once
// The launchers of the CUDA backend's kernels: plain pointers and shapes, no knowledge of the
// plugin ABI (ops.cpp maps slots onto them). Each returns the launch's error (cudaSuccess or
// the configuration error); faults inside a kernel surface at the next synchronising call.
// Activations are f32 row-major [tokens, features] as the ABI says.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "device/moe_routing.cuh"
#include "gpu_runtime.hpp"

namespace gptoss::cuda {

// Element type of device tensors: dense weights, embeddings, KV caches.
enum class Dt : int32_t { f32 = 0, bf16 = 1 };

// A row-major matrix on the device. Kernels move 8 elements at a time when cols % 8 == 0
// (every real model: 16-byte aligned rows), one at a time otherwise.
struct DenseView {
  const void* data;
  Dt dt;
  int64_t rows;
  int64_t cols;
};

// MXFP4 experts as the checkpoint stores them: codes [experts * rows, cols / 2] (16 bytes per
// block of 32, element 2j in the low nibble of byte j), scales [experts * rows, cols / 32].
struct Mxfp4View {
  const uint8_t* codes;
  const uint8_t* scales;
  int64_t experts;
  int64_t rows;  // per expert
  int64_t cols;
};

// Bad data found by a kernel (it then writes zeros instead of reading out of bounds): the
// first one is kept, in device memory, and reported at the next synchronising call
// (ErrorRecord, cuda_backend.hpp).
struct DeviceError {
  int32_t code;  // DeviceErrorCode
  int32_t pad;
  int64_t value;
  int64_t limit;
};
enum DeviceErrorCode : int32_t {
  kErrNone = 0,
  kErrTokenId = 1,    // token id >= vocabulary rows (or < 0)
  kErrKvSlot = 2,     // KV slot outside the cache
  kErrAttnSeq = 3,    // an attention sequence outside the call's rows or max_q
  kErrPageTable = 4,  // an attention token's keys outside its page table or cache
  kErrSampleRow = 5,  // a sample row's parameters out of range
};

// The wave64 emulation of the CUDA build (GPTOSS_CUDA_WAVE64=1, read once; gemv.cu): the
// GEMV-style kernels (gemv.cu, moe_gemv.cu) and the router run with 64-lane logical warps of
// two hardware warps each, the width the HIP build runs them with on CDNA wavefronts. Always
// false there.
bool wave64_emulation();

// f(std::integral_constant<int, W>{}) with the logical warp width W of this launch.
template <typename F>
cudaError_t with_warp_width(F&& f) {
  if constexpr (kWarpSize < 64)
    if (wave64_emulation()) return f(std::integral_constant<int, 64>{});
  return f(std::integral_constant<int, kWarpSize>{});
}

// ---- elementwise.cu ----------------------------------------------------------------------

// out[t, :] = table[tokens[t], :] widened to f32.
cudaError_t launch_embedding(cudaStream_t s, DenseView table, const int32_t* tokens, int64_t n, float* out,
                             DeviceError* err);
// out = x / sqrt(mean(x^2) + eps) * scale per row of `dim`. With `residual` non-null, first
// x += residual (in place), then the norm of the sum.
cudaError_t launch_rmsnorm(cudaStream_t s, float* x, const float* residual, const float* scale, int64_t n,
                           int64_t dim, float eps, float* out);
// x[i] += y[i].
cudaError_t launch_add(cudaStream_t s, float* x, const float* y, int64_t n);

// YaRN frequencies computed on the host in double (OpenAI's reference formula).
constexpr int kMaxRopeHalf = 128;
struct RopeTable {
  double inv_freq[kMaxRopeHalf];
  double concentration;
  int32_t half;  // head_dim / 2
};
// NeoX rotation in place of x [n, n_heads * 2 * half] at positions[t].
cudaError_t launch_rope(cudaStream_t s, float* x, const int32_t* positions, int64_t n, int64_t n_heads,
                        const RopeTable& table);
// rope(q, n_heads) in place, rope(k, n_kv_heads), then k and v rows into the caches at
// slots[t]: launch_rope + launch_kv_write in one kernel (k itself is left as it was).
cudaError_t launch_rope_kv_write(cudaStream_t s, float* q, const float* k, const float* v,
                                 const int32_t* positions, int64_t n, int64_t n_heads, int64_t n_kv_heads,
                                 const RopeTable& table, void* k_cache, void* v_cache, Dt dt,
                                 const int32_t* slots, int64_t n_slots, DeviceError* err);
// k, v rows [n, kv_dim] into the caches at slots[t] (n_slots rows of kv_dim each).
cudaError_t launch_kv_write(cudaStream_t s, void* k_cache, void* v_cache, Dt dt, const float* k,
                            const float* v, const int32_t* slots, int64_t n, int64_t kv_dim, int64_t n_slots,
                            DeviceError* err);

// ---- sampling.cu -------------------------------------------------------------------------

constexpr int kSampleMaxTop = 20;
// Layouts of struct gptoss_sample_row / gptoss_sample_result (plugin ABI 2).
struct SampleRow {
  float temperature;
  uint32_t top_k;
  float top_p;
  float min_p;
  double uniform;
  uint32_t top_n;
  uint32_t reserved;
};
struct SampleToken {
  uint32_t token;
  float logprob;
};
struct SampleResult {
  uint32_t token;
  float logprob;
  uint32_t n_top;
  uint32_t reserved;
  SampleToken top[kSampleMaxTop];
};
// Scratch of a sample call: the list of rows to sort whole (those whose sorted head of 1024
// tokens cannot hold what truncation keeps) and sort space for 4 of them at a time.
size_t sample_scratch_bytes(int64_t n_rows, int64_t vocab);
// results[r] for rows[r] over logits [n_rows, vocab]; mask null or uint32 [n_rows, (vocab + 31) / 32].
cudaError_t launch_sample(cudaStream_t s, const float* logits, const SampleRow* rows, const uint32_t* mask,
                          int64_t n_rows, int64_t vocab, SampleResult* results, void* scratch,
                          DeviceError* err);

// ---- attention.cu, attention_mma.cu (plugin ABI 2's sequence-based attention call) ------

constexpr int kAttnHeadDim = 64;         // the tiled kernels' head size (every gpt-oss model)
constexpr int kAttnMaxHeadDim = 256;     // other sizes up to this take a simple kernel

// Layout of struct gptoss_attn_seq: query rows q_begin .. q_begin + n_q - 1 at positions
// pos_begin .. pos_begin + n_q - 1, keys through page_table[page_table_offset ...].
struct AttnSeq {
  int32_t q_begin;
  int32_t n_q;
  int32_t pos_begin;
  int32_t page_table_offset;
};

struct AttnSeqArgs {
  const float* q;       // [n_tokens, n_heads * 64]
  const void* k_cache;  // [n_slots, (n_heads / group) * 64], f32 or bf16
  const void* v_cache;
  int64_t n_slots;
  const AttnSeq* seqs;  // [n_seqs]
  int32_t n_seqs;
  int32_t n_tokens;           // rows of q and out
  int32_t max_q;              // the largest n_q (host hint)
  int32_t q_blocks;           // set by the launcher
  int32_t row_first;          // split kernel: its blocks take rows row_first + x (launcher)
  int32_t window;             // 0: causal; W: keys [max(0, p - W + 1), p]
  const int32_t* page_table;  // [page_table_len]; -1 for released pages
  int64_t page_table_len;
  const float* sinks;  // [n_heads]
  int32_t n_heads;
  int32_t group;  // query heads per KV head
  int32_t page_size;
  float scale;
  float* out;      // like q
  float* partial;  // attention_scratch_bytes of scratch (attention.cu)
  DeviceError* err;
};
// Scratch of launch_attention: the split kernel's partials (bounded: it launches in chunks).
size_t attention_scratch_bytes(int64_t n_tokens, int64_t n_heads, int head_dim, int32_t group,
                               bool split);
// fp32 attention. split (the batch-invariant choice; ops_util.hpp, kernel_choice): each
// token's keys split over up to 16 blocks by its own span, whatever the call's size;
// otherwise 64 rows per block in one pass (also when group > 16). A head_dim other than 64
// (up to kAttnMaxHeadDim) takes a kernel of one block per (row, head).
cudaError_t launch_attention(cudaStream_t s, const AttnSeqArgs& a, int64_t n_tokens, int head_dim,
                             Dt kv_dt, bool split);
// Tensor-core prefill attention (fast precision): 64 / group tokens x group heads per block.
bool attention_mma_supported(int32_t group);
cudaError_t launch_attention_mma(cudaStream_t s, AttnSeqArgs a, Dt kv_dt);

// ---- router.cu ---------------------------------------------------------------------------

constexpr int kMaxExperts = 256;
constexpr int kMaxTopK = 16;
// ids/weights [n, top_k]: the top_k experts of W x + bias (ties: lower index first) and the
// softmax over their logits. w.rows <= kMaxExperts, top_k <= kMaxTopK.
cudaError_t launch_router(cudaStream_t s, const float* x, DenseView w, const float* bias, int64_t n,
                          int top_k, int32_t* ids, float* weights);

// ---- gemv.cu, gemm_mma.cu (dense) ------------------------------------------------------

// Up to three matrices applied to one input (Q, K and V fused): out[j] [n_tok, w[j].rows] =
// x W[j]^T (+ bias[j]). The matrices share cols and dtype.
struct LinearSegs {
  int32_t n;
  DenseView w[3];
  const float* bias[3];  // each may be null
  float* out[3];
};
inline LinearSegs one_linear(DenseView w, const float* bias, float* out) {
  return LinearSegs{1, {w, w, w}, {bias, nullptr, nullptr}, {out, nullptr, nullptr}};
}

// fp32 arithmetic, any n_tok (8 per pass).
cudaError_t launch_gemv(cudaStream_t s, const float* x, const LinearSegs& segs, int64_t n_tok);

// ---- moe_group.cu, moe_gemv.cu -----------------------------------------------------------

// Writes the routing of n_assign expert ids (device/moe_routing.cuh) into offsets,
// tile_offsets ([experts + 1] each) and order ([n_assign]). The weights hold experts
// [first_expert, first_expert + experts) (a slice, with expert parallelism): ids outside
// that range are left out (another device's share).
cudaError_t launch_moe_group(cudaStream_t s, const int32_t* ids, int64_t n_assign, int32_t experts,
                             int32_t first_expert, int32_t tile_m, int32_t* offsets, int32_t* tile_offsets,
                             int32_t* order);

// Assignments per tile of the GEMV-style MoE kernels: the routing's tile_m is 1 (one token
// per step: one assignment per expert) or kMoeGemvTile. A token's result is the same either way.
constexpr int kMoeGemvTile = 4;
// x [n, k] -> q [n, k] int8 and d [n, k / 32] (k % 32 == 0).
cudaError_t launch_quantize_q8(cudaStream_t s, const float* x, int64_t n, int64_t k, int8_t* q, float* d);
// Fast MoE projection over int8 activations (rows act_row = assignment / act_div).
// stage1: SwiGLU of mlp1, written quantized to act_q [n_assign, I] / act_d [n_assign, I / 32];
// else: y [n_assign, rows] = mlp2 act + bias.
cudaError_t launch_moe_q8(cudaStream_t s, bool stage1, const int8_t* xq, const float* xd, int act_div,
                          Mxfp4View w, const float* bias, const MoeRouting& routing, int64_t max_tiles,
                          float limit, int8_t* act_q, float* act_d, float* y);
// Exact MoE projection over f32 activations; stage1 writes act [n_assign, I] f32, else
// y [n_assign, rows].
cudaError_t launch_moe_f32(cudaStream_t s, bool stage1, const float* x, int act_div, Mxfp4View w,
                           const float* bias, const MoeRouting& routing, int64_t max_tiles, float limit,
                           float* out);
// out[t, :] = sum_j weights[t, j] y[t * top_k + j, :] in order of j, over the assignments
// whose expert lies in [first_expert, first_expert + experts).
cudaError_t launch_moe_combine(cudaStream_t s, const float* y, const int32_t* ids, const float* weights,
                               int64_t n, int top_k, int64_t dim, int32_t first_expert, int32_t experts,
                               float* out);

// ---- gemm_mma.cu (fast precision, many tokens) -----------------------------------------

// Whether these kernels may take fast-precision calls of many tokens when batch invariance is
// off (kernel_choice, ops_util.hpp): always in the CUDA build; in the HIP build (MFMA) only
// with GPTOSS_HIP_MFMA=1 (read once), until an MI250 has run backend-ops through them.
bool matrix_units_enabled();

// Rows of A per tile; also the routing's tile_m for launch_gemm_moe.
constexpr int kGemmTileM = 64;
// As launch_gemv, on bf16 tensor cores with fp32 accumulation.
cudaError_t launch_gemm_dense(cudaStream_t s, const float* x, const LinearSegs& segs, int64_t m);
// As launch_moe_f32 (same outputs), on tensor cores; routing.tile_m == kGemmTileM.
cudaError_t launch_gemm_moe(cudaStream_t s, bool stage1, const float* a, int act_div, Mxfp4View w,
                            const float* bias, const MoeRouting& routing, int64_t max_tiles, float limit,
                            float* out);

}  // namespace gptoss::cuda
