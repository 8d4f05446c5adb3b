// AVX2 + FMA attention tile kernels (see attention_kernels.hpp). Built with -mavx2 -mfma and
// only called when cpuid reports them.
//
// Register tiles (16 ymm registers): scores 2 query rows x 32 keys (8 accumulators, each K
// vector loaded once per 2 rows); P.V 2 rows x 32 head-dimension lanes (8 accumulators, each
// V vector loaded once per 2 rows). The accumulators of P.V stay in registers over all keys
// of the tile, and the online-softmax rescale is folded into their first load.
#include <immintrin.h>

#include "attention_kernels.hpp"
#include "attention_simd.hpp"

namespace gptoss::cpu {
namespace {

// e^x to about 2 ulp for x in [-87, 88] (clamped outside: the callers only need exp(x <= 0),
// where the clamp gives ~1e-38 instead of smaller; masked lanes are zeroed after).
inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);  // x - n ln2, in two parts
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040);  // Taylor to r^7: |r| <= ln2 / 2
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

inline float hmax8(__m256 v) {
  __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_max_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_max_ss(x, _mm_movehdup_ps(x)));
}
inline float hsum8(__m256 v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_add_ss(x, _mm_movehdup_ps(x)));
}

template <int NR>
void scores_rows(const float* q, size_t hd, const float* kt, float* s) {
  __m256 a[NR][4];
  for (int r = 0; r < NR; ++r)
    for (int j = 0; j < 4; ++j) a[r][j] = _mm256_setzero_ps();
  for (size_t d = 0; d < hd; ++d) {
    __m256 k[4];
    for (int j = 0; j < 4; ++j) k[j] = _mm256_loadu_ps(kt + d * kAttnTile + 8 * j);
    for (int r = 0; r < NR; ++r) {
      const __m256 qv = _mm256_broadcast_ss(q + size_t(r) * hd + d);
      for (int j = 0; j < 4; ++j) a[r][j] = _mm256_fmadd_ps(qv, k[j], a[r][j]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int j = 0; j < 4; ++j) _mm256_storeu_ps(s + size_t(r) * kAttnTile + 8 * j, a[r][j]);
}

void scores(const float* q, size_t n_rows, size_t hd, const float* kt, float* s) {
  size_t r = 0;
  for (; r + 2 <= n_rows; r += 2) scores_rows<2>(q + r * hd, hd, kt, s + r * kAttnTile);
  if (r < n_rows) scores_rows<1>(q + r * hd, hd, kt, s + r * kAttnTile);
}

void softmax_step(float* s, size_t n_rows, const int32_t* row_begin, const int32_t* row_end,
                  int32_t j0, size_t n, float* m, float* l, float* corr) {
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 neg_inf = _mm256_set1_ps(-__builtin_inff());
  for (size_t r = 0; r < n_rows; ++r) {
    float* sr = s + r * kAttnTile;
    int32_t lo = row_begin[r] - j0, hi = row_end[r] - j0;
    lo = lo < 0 ? 0 : lo;
    hi = hi > int32_t(n) ? int32_t(n) : hi;
    if (lo >= hi) {  // no visible key in this tile: nothing changes (and no -inf - -inf)
      for (int j = 0; j < 4; ++j) _mm256_storeu_ps(sr + 8 * j, _mm256_setzero_ps());
      corr[r] = 1.0f;
      continue;
    }
    __m256 x[4], valid[4], mx = neg_inf;
    for (int j = 0; j < 4; ++j) {
      const __m256i idx = _mm256_add_epi32(iota, _mm256_set1_epi32(8 * j));
      valid[j] = _mm256_castsi256_ps(_mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(lo), idx),
                                                         _mm256_cmpgt_epi32(_mm256_set1_epi32(hi), idx)));
      x[j] = _mm256_blendv_ps(neg_inf, _mm256_loadu_ps(sr + 8 * j), valid[j]);
      mx = _mm256_max_ps(mx, x[j]);
    }
    const float m_new = m[r] > hmax8(mx) ? m[r] : hmax8(mx);
    corr[r] = m[r] == -__builtin_inff() ? 0.0f : _mm256_cvtss_f32(exp8(_mm256_set1_ps(m[r] - m_new)));
    __m256 sum = _mm256_setzero_ps();
    for (int j = 0; j < 4; ++j) {
      const __m256 p = _mm256_and_ps(exp8(_mm256_sub_ps(x[j], _mm256_set1_ps(m_new))), valid[j]);
      _mm256_storeu_ps(sr + 8 * j, p);
      sum = _mm256_add_ps(sum, p);
    }
    l[r] = l[r] * corr[r] + hsum8(sum);
    m[r] = m_new;
  }
}

// Lanes [d0 + 8j, d0 + 8j + 8) that are below hd, as maskload masks.
inline __m256i lanes_below(size_t d0, size_t hd, int j) {
  const __m256i idx = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                       _mm256_set1_epi32(int(d0) + 8 * j));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(hd)), idx);
}

// Rows r < NR, head-dimension lanes [d0, d0 + 32). Full: all 32 lanes exist (no masks). (The
// unroll pragmas make GCC keep the accumulator array in registers instead of storing it to
// the stack on every key.)
template <int NR, bool Full>
void pv_block(const float* p, const float* const* v, size_t n, size_t hd, size_t d0,
              const float* corr, float* acc) {
  __m256i mk[4];
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) mk[j] = Full ? _mm256_set1_epi32(-1) : lanes_below(d0, hd, j);
  auto load = [&](const float* ptr, int j) {
    return Full ? _mm256_loadu_ps(ptr + 8 * j) : _mm256_maskload_ps(ptr + 8 * j, mk[j]);
  };
  __m256 a[NR][4];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j)
      a[r][j] = _mm256_mul_ps(load(acc + size_t(r) * hd + d0, j), _mm256_set1_ps(corr[r]));
  for (size_t i = 0; i < n; ++i) {
    __m256 vv[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) vv[j] = load(v[i] + d0, j);
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      const __m256 pr = _mm256_broadcast_ss(p + size_t(r) * kAttnTile + i);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) a[r][j] = _mm256_fmadd_ps(pr, vv[j], a[r][j]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      float* dst = acc + size_t(r) * hd + d0 + 8 * j;
      if (Full) _mm256_storeu_ps(dst, a[r][j]);
      else _mm256_maskstore_ps(dst, mk[j], a[r][j]);
    }
}

template <int NR>
void pv_rows(const float* p, const float* const* v, size_t n, size_t hd, const float* corr,
             float* acc) {
  size_t d0 = 0;
  for (; d0 + 32 <= hd; d0 += 32) pv_block<NR, true>(p, v, n, hd, d0, corr, acc);
  if (d0 < hd) pv_block<NR, false>(p, v, n, hd, d0, corr, acc);
}

void pv(const float* p, size_t n_rows, const float* const* v, size_t n, size_t hd,
        const float* corr, float* acc) {
  size_t r = 0;
  for (; r + 2 <= n_rows; r += 2)
    pv_rows<2>(p + r * kAttnTile, v, n, hd, corr + r, acc + r * hd);
  if (r < n_rows) pv_rows<1>(p + r * kAttnTile, v, n, hd, corr + r, acc + r * hd);
}

}  // namespace

namespace avx2 {
extern const AttnKernels kAttention;
const AttnKernels kAttention = {
    .load_k_tile = load_k_tile,
    .widen_rows = widen_rows,
    .scores = scores,
    .softmax_step = softmax_step,
    .pv = pv,
};
}  // namespace avx2

}  // namespace gptoss::cpu
