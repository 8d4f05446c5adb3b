#pragma once
// The inner kernels of the tiled attention op (ops/attention.cpp), a table per level that has
// its own (Kernels::attention): scalar/attention.cpp (the reference the SIMD tables are tested
// against), avx2/attention.cpp, avx512/attention.cpp (also in the tables above avx512).
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

// kernels_for(isa).attention. Isa::scalar: the reference table, which the op itself never uses
// (scalar devices run ref_attention).
const AttnKernels& attention_kernels_for(Isa isa);

// Fast precision over a bf16 cache where the CPU has AVX512-BF16: the dot products of scores
// and P.V take pairs of bf16 (vdpbf16ps: both products of a pair added to an fp32 sum), so a
// cached K or V value is used as stored, and the scaled queries and the probabilities are
// rounded to bf16 (to nearest even). Arrays of pairs hold each pair's two bf16 in one 32-bit
// lane, the even element in the low half: they are typed float* (scratch) but hold bits.
// A K tile of pairs is the usual gather over rows of hd / 2 "f32" values, which moves each
// pair bit for bit: load_k_tile(rows, n, hd / 2, 0, kt2), pair p of key i at p * kAttnTile + i.
struct AttnBf16Kernels {
  // out[i] = the pair (x[2i], x[2i + 1]) rounded to bf16, for i < n_pairs.
  void (*round_pairs)(const float* x, size_t n_pairs, float* out);
  // s[r * kAttnTile + i] = sum over p < hd2 of the pair products of q2[r * hd2 + p] and
  // kt2[p * kAttnTile + i], for r < n_rows, i < kAttnTile.
  void (*scores)(const float* q2, size_t n_rows, size_t hd2, const float* kt2, float* s);
  // vt2[j * hd + d] = the pair (rows[2j][d], rows[2j + 1][d]) (bf16 rows) for j < (n + 1) / 2;
  // a missing last odd row reads as zeros.
  void (*pair_rows)(const void* const* rows, size_t n, size_t hd, float* vt2);
  // acc[r * hd + d] = acc[r * hd + d] * corr[r] + sum over j < (n + 1) / 2 of the pair product
  // of (p[r * kAttnTile + 2j], p[r * kAttnTile + 2j + 1]) rounded to bf16 and vt2[j * hd + d].
  void (*pv)(const float* p, size_t n_rows, const float* vt2, size_t n, size_t hd,
             const float* corr, float* acc);
};

// kernels_for(isa).attention_bf16: the reference at Isa::scalar (tests), null below avx512bf16.
const AttnBf16Kernels* attention_bf16_kernels_for(Isa isa);

}  // namespace gptoss::cpu
