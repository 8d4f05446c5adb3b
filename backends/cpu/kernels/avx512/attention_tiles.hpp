#pragma once
// The register tiles of the AVX-512 attention kernels, shared by avx512/attention.cpp (fp32
// FMA) and avx512bf16/attention.cpp (vdpbf16ps over bf16 pairs): the same loops, with the
// multiply-add as a parameter. Step(acc, b, x) returns acc + b * x for fp32, or acc plus both
// pair products of b and x for bf16 pairs; b is the broadcast operand (a query element or pair,
// a probability or pair of them). In an anonymous namespace: each includer gets its own copy
// built with its own -m flags (see matmul_driver.hpp).
//
// Scores: 8 query rows x 32 keys (16 accumulators; each K vector loaded once per 8 rows).
// P.V: 4 rows x 64 head-dimension lanes (16 accumulators, each V vector loaded once per 4
// rows), kept in registers over all keys of the tile, with the online-softmax rescale folded
// into their first load; head dimensions that are no multiple of 16 use lane masks. (The
// unroll pragmas make GCC keep the accumulator arrays in registers instead of on the stack.)
#include <immintrin.h>

#include "attention_kernels.hpp"

namespace gptoss::cpu {
namespace {

// s[r * kAttnTile + i] = sum over p < steps of Step(q[r * steps + p], kt[p * kAttnTile + i]).
template <int NR, class Step>
void scores_tile(const float* q, size_t steps, const float* kt, float* s, Step step) {
  __m512 a[NR][2];
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r) a[r][0] = a[r][1] = _mm512_setzero_ps();
  for (size_t p = 0; p < steps; ++p) {
    const __m512 k0 = _mm512_loadu_ps(kt + p * kAttnTile), k1 = _mm512_loadu_ps(kt + p * kAttnTile + 16);
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) {
      const __m512 qv = _mm512_set1_ps(q[size_t(r) * steps + p]);
      a[r][0] = step(a[r][0], qv, k0);
      a[r][1] = step(a[r][1], qv, k1);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r) {
    _mm512_storeu_ps(s + size_t(r) * kAttnTile, a[r][0]);
    _mm512_storeu_ps(s + size_t(r) * kAttnTile + 16, a[r][1]);
  }
}

template <class Step>
void scores_rows(const float* q, size_t n_rows, size_t steps, const float* kt, float* s, Step step) {
  size_t r = 0;
  for (; r + 8 <= n_rows; r += 8) scores_tile<8>(q + r * steps, steps, kt, s + r * kAttnTile, step);
  const float* qr = q + r * steps;
  float* sr = s + r * kAttnTile;
  switch (n_rows - r) {
    case 7: scores_tile<7>(qr, steps, kt, sr, step); break;
    case 6: scores_tile<6>(qr, steps, kt, sr, step); break;
    case 5: scores_tile<5>(qr, steps, kt, sr, step); break;
    case 4: scores_tile<4>(qr, steps, kt, sr, step); break;
    case 3: scores_tile<3>(qr, steps, kt, sr, step); break;
    case 2: scores_tile<2>(qr, steps, kt, sr, step); break;
    case 1: scores_tile<1>(qr, steps, kt, sr, step); break;
    default: break;
  }
}

// Rows r < NR, lanes [d0, d0 + 64) (those below hd when not Full): acc = acc * corr[r] + sum
// over i < n of Step(p[r * p_stride + i], v(i)[d]); v(i) returns the i-th V row.
template <int NR, bool Full, class Step, class VRow>
void pv_tile(const float* p, size_t p_stride, VRow v, size_t n, size_t hd, size_t d0,
             const float* corr, float* acc, Step step) {
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
    for (int j = 0; j < 4; ++j) vv[j] = load(v(i) + d0, j);
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      const __m512 pr = _mm512_set1_ps(p[size_t(r) * p_stride + i]);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) a[r][j] = step(a[r][j], pr, vv[j]);
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

template <int NR, class Step, class VRow>
void pv_lanes(const float* p, size_t p_stride, VRow v, size_t n, size_t hd, const float* corr,
              float* acc, Step step) {
  size_t d0 = 0;
  for (; d0 + 64 <= hd; d0 += 64) pv_tile<NR, true>(p, p_stride, v, n, hd, d0, corr, acc, step);
  if (d0 < hd) pv_tile<NR, false>(p, p_stride, v, n, hd, d0, corr, acc, step);
}

// Rows r < n_rows: acc[r * hd + d] = acc * corr[r] + sum over i < n of
// Step(p[r * p_stride + i], v(i)[d]).
template <class Step, class VRow>
void pv_rows(const float* p, size_t p_stride, size_t n_rows, VRow v, size_t n, size_t hd,
             const float* corr, float* acc, Step step) {
  size_t r = 0;
  for (; r + 4 <= n_rows; r += 4)
    pv_lanes<4>(p + r * p_stride, p_stride, v, n, hd, corr + r, acc + r * hd, step);
  for (; r < n_rows; ++r) pv_lanes<1>(p + r * p_stride, p_stride, v, n, hd, corr + r, acc + r * hd, step);
}

}  // namespace
}  // namespace gptoss::cpu
