#pragma once
// The inner kernels of the tiled attention op (ops_attention.cpp), one table per
// instruction-set level: attention_scalar.cpp (the reference the SIMD tables are tested
// against), attention_avx2.cpp, attention_avx512.cpp (also used at Isa::avx512vnni).
//
// A tile is kAttnTile consecutive key positions of one KV head. The op gathers it from the
// paged cache (K transposed, so that the scores of a query row are a few vectors over keys;
// V key-major, so that P.V accumulates vectors over the head dimension), then for the
// n_rows query rows of a work item: scores, online-softmax step, P.V accumulate.
#include <cstddef>
#include <cstdint>

#include "kernels.hpp"

namespace gptoss::cpu {

constexpr size_t kAttnTile = 32;

struct AttnKernels {
  // kt[d * kAttnTile + i] = rows[i][d] widened to fp32, for d < hd, i < n (n <= kAttnTile);
  // zero for n <= i < kAttnTile, so that scores of missing keys are finite. rows[i] points at
  // hd values, fp32 or (bf16 != 0) bf16.
  void (*load_k_tile)(const void* const* rows, size_t n, size_t hd, int bf16, float* kt);
  // vt[i * hd + d] = rows[i][d] (bf16) widened, for i < n.
  void (*widen_rows)(const void* const* rows, size_t n, size_t hd, float* vt);
  // s[r * kAttnTile + i] = dot(q + r * hd, column i of kt) for r < n_rows, i < kAttnTile.
  void (*scores)(const float* q, size_t n_rows, size_t hd, const float* kt, float* s);
  // One step of the online softmax over the tile of key positions [j0, j0 + n). Row r sees
  // only keys in [row_begin[r], row_end[r]) (causal limit and sliding window); the others get
  // probability 0. Updates the running max m[r] (-inf until a row has seen a key) and sum
  // l[r], turns s into probabilities relative to the new max, and writes corr[r], the factor
  // that rescales the row's accumulator to the new max (1 for a row with no key in the tile,
  // never NaN).
  void (*softmax_step)(float* s, size_t n_rows, const int32_t* row_begin, const int32_t* row_end,
                       int32_t j0, size_t n, float* m, float* l, float* corr);
  // acc[r * hd + d] = acc[r * hd + d] * corr[r] + sum_{i < n} p[r * kAttnTile + i] * v[i][d].
  void (*pv)(const float* p, size_t n_rows, const float* const* v, size_t n, size_t hd,
             const float* corr, float* acc);
};

// The table of a level (that level must be supported by the CPU to be called). Isa::scalar
// returns the reference table, which the op itself never uses (Isa::scalar devices run
// ref_attention).
const AttnKernels& attention_kernels_for(Isa isa);

}  // namespace gptoss::cpu
