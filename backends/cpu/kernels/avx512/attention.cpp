// The avx512 level's attention tile kernels (see attention_kernels.hpp), also in the tables
// above it; built with the AVX-512 flags.
//
// The register tiles of scores and P.V (attention_tiles.hpp) with the FMA; the
// gathers from attention_simd.hpp.
#include <immintrin.h>

#include "attention_kernels.hpp"
#include "attention_simd.hpp"
#include "avx512/attention_tiles.hpp"

namespace gptoss::cpu {
namespace {

// e^x to about 2 ulp; x = -inf or very negative gives 0 (scalef handles the whole range).
inline __m512 exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(88.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);  // x - n ln2, in two parts
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040);  // Taylor to r^7: |r| <= ln2 / 2
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

struct FmaStep {
  __m512 operator()(__m512 acc, __m512 b, __m512 x) const { return _mm512_fmadd_ps(b, x, acc); }
};

void scores(const float* q, size_t n_rows, size_t hd, const float* kt, float* s) {
  scores_rows(q, n_rows, hd, kt, s, FmaStep{});
}

// Per row as the scalar reference, in passes over up to 16 rows so that the rows' horizontal
// reductions (latency chains) overlap instead of following one another, and with the rescale
// factors corr = e^(m_old - m_new) of all of them from one exp16: per lane the operations of
// one row at a time (20b decode has 8 rows a tile: one row at a time was a quarter of the
// step's time).
void softmax_step(float* s, size_t n_rows, const int32_t* row_begin, const int32_t* row_end,
                  int32_t j0, size_t n, float* m, float* l, float* corr) {
  const __m512 neg_inf = _mm512_set1_ps(-__builtin_inff());
  for (size_t r0 = 0; r0 < n_rows; r0 += 16) {
    const size_t rows = n_rows - r0 < 16 ? n_rows - r0 : 16;
    __mmask16 v0[16], v1[16];
    bool seen[16];                                      // the row sees a key of this tile
    alignas(64) float dm[16] = {}, m_new[16], vec[16][16];  // dm = m_old - m_new (0: unchanged)
    for (size_t k = 0; k < rows; ++k) {
      const size_t r = r0 + k;
      int32_t lo = row_begin[r] - j0, hi = row_end[r] - j0;
      lo = lo < 0 ? 0 : lo;
      hi = hi > int32_t(n) ? int32_t(n) : hi;
      seen[k] = lo < hi;
      const uint32_t bits = seen[k] ? uint32_t(((uint64_t(1) << hi) - 1) & ~((uint64_t(1) << lo) - 1)) : 0;
      v0[k] = __mmask16(bits), v1[k] = __mmask16(bits >> 16);
      const float* sr = s + r * kAttnTile;
      _mm512_store_ps(vec[k], _mm512_max_ps(_mm512_mask_loadu_ps(neg_inf, v0[k], sr),
                                            _mm512_mask_loadu_ps(neg_inf, v1[k], sr + 16)));
    }
    for (size_t k = 0; k < rows; ++k) {
      if (!seen[k]) continue;
      const float mx = _mm512_reduce_max_ps(_mm512_load_ps(vec[k]));
      m_new[k] = m[r0 + k] > mx ? m[r0 + k] : mx;
      dm[k] = m[r0 + k] - m_new[k];  // m = -inf: e^-inf = 0
    }
    for (size_t k = 0; k < rows; ++k) {
      float* sr = s + (r0 + k) * kAttnTile;
      if (!seen[k]) {  // no visible key in this tile: nothing changes (and no -inf - -inf)
        _mm512_storeu_ps(sr, _mm512_setzero_ps());
        _mm512_storeu_ps(sr + 16, _mm512_setzero_ps());
        continue;
      }
      const __m512 mv = _mm512_set1_ps(m_new[k]);
      const __m512 p0 = _mm512_maskz_mov_ps(v0[k], exp16(_mm512_sub_ps(_mm512_mask_loadu_ps(neg_inf, v0[k], sr), mv)));
      const __m512 p1 = _mm512_maskz_mov_ps(v1[k], exp16(_mm512_sub_ps(_mm512_mask_loadu_ps(neg_inf, v1[k], sr + 16), mv)));
      _mm512_storeu_ps(sr, p0);
      _mm512_storeu_ps(sr + 16, p1);
      _mm512_store_ps(vec[k], _mm512_add_ps(p0, p1));
    }
    alignas(64) float c[16];
    _mm512_store_ps(c, exp16(_mm512_load_ps(dm)));  // e^0 = 1 exactly for unchanged rows
    for (size_t k = 0; k < rows; ++k) {
      corr[r0 + k] = c[k];
      if (!seen[k]) continue;
      l[r0 + k] = l[r0 + k] * c[k] + _mm512_reduce_add_ps(_mm512_load_ps(vec[k]));
      m[r0 + k] = m_new[k];
    }
  }
}

void pv(const float* p, size_t n_rows, const float* const* v, size_t n, size_t hd,
        const float* corr, float* acc) {
  pv_rows(p, kAttnTile, n_rows, [v](size_t i) { return v[i]; }, n, hd, corr, acc, FmaStep{});
}

}  // namespace

namespace avx512 {
extern const AttnKernels kAttention;
const AttnKernels kAttention = {
    .load_k_tile = load_k_tile,
    .widen_rows = widen_rows,
    .scores = scores,
    .softmax_step = softmax_step,
    .pv = pv,
};
}  // namespace avx512

}  // namespace gptoss::cpu
