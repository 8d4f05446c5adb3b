// AVX-512 (F/BW/VL/DQ) attention tile kernels (see attention_kernels.hpp), also used at
// Isa::avx512vnni. Built with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma and only called
// when cpuid reports them.
//
// Register tiles (32 zmm registers): scores 8 query rows x 32 keys (16 accumulators; the
// query element is a broadcast operand of the FMA, each K vector is loaded once per 8 rows);
// P.V 4 rows x 64 head-dimension lanes (16 accumulators, each V vector loaded once per 4
// rows), kept in registers over all keys of the tile, with the online-softmax rescale folded
// into their first load. Head dimensions that are not a multiple of 16 use lane masks.
#include <immintrin.h>

#include "attention_kernels.hpp"
#include "attention_simd.hpp"

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

template <int NR>
void scores_rows(const float* q, size_t hd, const float* kt, float* s) {
  __m512 a[NR][2];
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r) a[r][0] = a[r][1] = _mm512_setzero_ps();
  for (size_t d = 0; d < hd; ++d) {
    const __m512 k0 = _mm512_loadu_ps(kt + d * kAttnTile), k1 = _mm512_loadu_ps(kt + d * kAttnTile + 16);
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) {
      const __m512 qv = _mm512_set1_ps(q[size_t(r) * hd + d]);
      a[r][0] = _mm512_fmadd_ps(qv, k0, a[r][0]);
      a[r][1] = _mm512_fmadd_ps(qv, k1, a[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r) {
    _mm512_storeu_ps(s + size_t(r) * kAttnTile, a[r][0]);
    _mm512_storeu_ps(s + size_t(r) * kAttnTile + 16, a[r][1]);
  }
}

using ScoresFn = void (*)(const float*, size_t, const float*, float*);
constexpr ScoresFn kScoresTail[8] = {nullptr, scores_rows<1>, scores_rows<2>, scores_rows<3>,
                                     scores_rows<4>, scores_rows<5>, scores_rows<6>, scores_rows<7>};

void scores(const float* q, size_t n_rows, size_t hd, const float* kt, float* s) {
  size_t r = 0;
  for (; r + 8 <= n_rows; r += 8) scores_rows<8>(q + r * hd, hd, kt, s + r * kAttnTile);
  if (r < n_rows) kScoresTail[n_rows - r](q + r * hd, hd, kt, s + r * kAttnTile);
}

// Per row as the scalar reference, in passes over up to 16 rows so that the rows' horizontal
// reductions (latency chains) overlap instead of following one another, and with the rescale
// factors corr = e^(m_old - m_new) of all of them from one exp16. Lane for lane the same
// values as one row at a time (20b decode: 8 rows a tile; ~25 % of the step's time before).
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

// Rows r < NR, head-dimension lanes [d0, d0 + 64): all of them when Full, else those below
// hd (lane masks). (The unroll pragmas make GCC keep the accumulator array in registers
// instead of storing it to the stack on every key.)
template <int NR, bool Full>
void pv_block(const float* p, const float* const* v, size_t n, size_t hd, size_t d0,
              const float* corr, float* acc) {
  __mmask16 mk[4];
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const size_t lo = d0 + 16 * size_t(j);
    mk[j] = Full || lo + 16 <= hd ? __mmask16(0xffff) : lo >= hd ? 0 : __mmask16((1u << (hd - lo)) - 1);
  }
  auto load = [&](const float* src, int j) {
    return Full ? _mm512_loadu_ps(src + 16 * j) : _mm512_maskz_loadu_ps(mk[j], src + 16 * j);
  };
  __m512 a[NR][4];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j)
      a[r][j] = _mm512_mul_ps(load(acc + size_t(r) * hd + d0, j), _mm512_set1_ps(corr[r]));
  for (size_t i = 0; i < n; ++i) {
    __m512 vv[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) vv[j] = load(v[i] + d0, j);
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      const __m512 pr = _mm512_set1_ps(p[size_t(r) * kAttnTile + i]);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) a[r][j] = _mm512_fmadd_ps(pr, vv[j], a[r][j]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      float* dst = acc + size_t(r) * hd + d0 + 16 * j;
      if (Full) _mm512_storeu_ps(dst, a[r][j]);
      else _mm512_mask_storeu_ps(dst, mk[j], a[r][j]);
    }
}

template <int NR>
void pv_rows(const float* p, const float* const* v, size_t n, size_t hd, const float* corr,
             float* acc) {
  size_t d0 = 0;
  for (; d0 + 64 <= hd; d0 += 64) pv_block<NR, true>(p, v, n, hd, d0, corr, acc);
  if (d0 < hd) pv_block<NR, false>(p, v, n, hd, d0, corr, acc);
}

void pv(const float* p, size_t n_rows, const float* const* v, size_t n, size_t hd,
        const float* corr, float* acc) {
  size_t r = 0;
  for (; r + 4 <= n_rows; r += 4) pv_rows<4>(p + r * kAttnTile, v, n, hd, corr + r, acc + r * hd);
  for (; r < n_rows; ++r) pv_rows<1>(p + r * kAttnTile, v, n, hd, corr + r, acc + r * hd);
}

}  // namespace

extern const AttnKernels kAttnKernelsAvx512;
const AttnKernels kAttnKernelsAvx512 = {load_k_tile, widen_rows, scores, softmax_step, pv};

}  // namespace gptoss::cpu
