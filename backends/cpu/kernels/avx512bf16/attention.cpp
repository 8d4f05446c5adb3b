// The avx512bf16 level's attention kernels over bf16 pairs (AttnBf16Kernels,
// attention_kernels.hpp), built with -mavx512bf16 on top of the AVX-512 flags.
//
// The register tiles of avx512/attention.cpp (avx512/attention_tiles.hpp) with vdpbf16ps in
// place of the FMA, so each instruction takes two head-dimension elements (scores: a query
// pair broadcast per row) or two keys (P.V: a probability pair broadcast per row).
#include <immintrin.h>

#include "attention_kernels.hpp"
#include "avx512/attention_tiles.hpp"

namespace gptoss::cpu {
namespace {

inline __m512bh as_bh(__m512 x) { return reinterpret_cast<__m512bh>(x); }

// 32 floats [lo, hi) rounded to bf16, element order kept: lane i holds pair (x[2i], x[2i + 1]).
inline __m512 round32(__m512 lo, __m512 hi) {
  return reinterpret_cast<__m512>(_mm512_cvtne2ps_pbh(hi, lo));
}

void round_pairs(const float* x, size_t n_pairs, float* out) {
  size_t i = 0;
  for (; i + 16 <= n_pairs; i += 16)
    _mm512_storeu_ps(out + i, round32(_mm512_loadu_ps(x + 2 * i), _mm512_loadu_ps(x + 2 * i + 16)));
  if (i < n_pairs) {  // the last < 16 pairs: 2 * (n_pairs - i) floats
    const size_t w = 2 * (n_pairs - i);
    const __mmask16 m0 = __mmask16(w >= 16 ? 0xffff : (1u << w) - 1);
    const __mmask16 m1 = __mmask16(w > 16 ? (1u << (w - 16)) - 1 : 0);
    const __m512 r = round32(_mm512_maskz_loadu_ps(m0, x + 2 * i), _mm512_maskz_loadu_ps(m1, x + 2 * i + 16));
    _mm512_mask_storeu_ps(out + i, __mmask16((1u << (n_pairs - i)) - 1), r);
  }
}

struct Dot2Step {  // acc + both products of the bf16 pairs in b and x
  __m512 operator()(__m512 acc, __m512 b, __m512 x) const { return _mm512_dpbf16_ps(acc, as_bh(b), as_bh(x)); }
};

void scores(const float* q2, size_t n_rows, size_t hd2, const float* kt2, float* s) {
  scores_rows(q2, n_rows, hd2, kt2, s, Dot2Step{});
}

// Word w of the result: for w = 2t, element t (+16 for the upper half) of a; for w = 2t + 1,
// the same element of b (indices 32..63 select b).
inline __m512i pair_index(int upper) {
  alignas(64) uint16_t idx[32];
  for (int t = 0; t < 16; ++t) {
    idx[2 * t] = uint16_t(t + 16 * upper);
    idx[2 * t + 1] = uint16_t(32 + t + 16 * upper);
  }
  return _mm512_load_si512(idx);
}

void pair_rows(const void* const* rows, size_t n, size_t hd, float* vt2) {
  const __m512i lo_idx = pair_index(0), hi_idx = pair_index(1);
  for (size_t j = 0; 2 * j < n; ++j) {
    const auto* a = static_cast<const uint16_t*>(rows[2 * j]);
    const auto* b = 2 * j + 1 < n ? static_cast<const uint16_t*>(rows[2 * j + 1]) : nullptr;
    float* out = vt2 + j * hd;
    size_t d = 0;
    for (; d + 32 <= hd; d += 32) {  // plain loads: the hardware prefetcher follows them
      const __m512i x = _mm512_loadu_si512(a + d);
      const __m512i y = b ? _mm512_loadu_si512(b + d) : _mm512_setzero_si512();
      _mm512_storeu_si512(out + d, _mm512_permutex2var_epi16(x, lo_idx, y));
      _mm512_storeu_si512(out + d + 16, _mm512_permutex2var_epi16(x, hi_idx, y));
    }
    if (d < hd) {
      const size_t w = hd - d;
      const __mmask32 m = __mmask32((uint64_t(1) << w) - 1);
      const __m512i x = _mm512_maskz_loadu_epi16(m, a + d);
      const __m512i y = b ? _mm512_maskz_loadu_epi16(m, b + d) : _mm512_setzero_si512();
      const __mmask16 m0 = __mmask16(w >= 16 ? 0xffff : (1u << w) - 1);
      const __mmask16 m1 = __mmask16(w > 16 ? (1u << (w - 16)) - 1 : 0);
      _mm512_mask_storeu_epi32(out + d, m0, _mm512_permutex2var_epi16(x, lo_idx, y));
      _mm512_mask_storeu_epi32(out + d + 16, m1, _mm512_permutex2var_epi16(x, hi_idx, y));
    }
  }
}

void pv(const float* p, size_t n_rows, const float* vt2, size_t n, size_t hd, const float* corr,
        float* acc) {
  constexpr size_t kMaxRows = 64;  // rows per call in 64-row chunks: the pairs stay on the stack
  alignas(64) float p2[kMaxRows * kAttnTile / 2];
  const size_t n_pairs = (n + 1) / 2;
  for (size_t r0 = 0; r0 < n_rows; r0 += kMaxRows) {
    const size_t rows = n_rows - r0 < kMaxRows ? n_rows - r0 : kMaxRows;
    for (size_t r = 0; r < rows; ++r)
      _mm512_storeu_ps(p2 + r * (kAttnTile / 2),
                       round32(_mm512_loadu_ps(p + (r0 + r) * kAttnTile), _mm512_loadu_ps(p + (r0 + r) * kAttnTile + 16)));
    pv_rows(p2, kAttnTile / 2, rows, [vt2, hd](size_t i) { return vt2 + i * hd; }, n_pairs, hd,
            corr + r0, acc + r0 * hd, Dot2Step{});
  }
}

}  // namespace

namespace avx512bf16 {
extern const AttnBf16Kernels kAttentionBf16;
const AttnBf16Kernels kAttentionBf16 = {
    .round_pairs = round_pairs,
    .scores = scores,
    .pair_rows = pair_rows,
    .pv = pv,
};
}  // namespace avx512bf16

}  // namespace gptoss::cpu
