// The fp32 kernels of the avx512 level (Kernels::matmul, swiglu, sum_exp; also in the tables
// above it), built with the AVX-512 flags. fp32 activations and accumulation throughout (exact
// mode): weights are widened to fp32 in registers (bf16: a shift; MXFP4: a 16-entry permute of the
// E2M1 values, then one multiply by the block scale per 32 products).
//
// Work split (by the caller): each call owns a range of output rows.
//   n_tok == 1: 4 rows share every load of x (GEMV; memory-bound; which rows: row_streams.hpp).
//   n_tok > 1: 16 rows are decoded once into an fp32 panel (in L2), then 4x4 register tiles
//   (4 rows x 4 tokens, 16 accumulators) sweep the panel for every group of 4 tokens.
#include <immintrin.h>

#include "cpu_backend.hpp"
#include "kernels.hpp"
#include "matmul_driver.hpp"

namespace gptoss::cpu {
namespace {

inline __m512 mxfp4_lut() {
  return _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f,
                        -1.5f, -2.0f, -3.0f, -4.0f, -6.0f);
}
inline __m512 bf16x16(const uint16_t* p) {
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
}
inline __m512 bf16x16_masked(const uint16_t* p, __mmask16 m) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}
inline __m512 f16x16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline __m512 f16x16_masked(const uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
// Half h (h = 0, 1) of the 32 int8 values of a Q8_0 block (34 bytes: f16 d, then q) as floats.
inline __m512 q8_0_half(const uint8_t* block, int h) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2 + 16 * h))));
}
inline float q8_0_scale(const uint8_t* block) {
  uint16_t d;
  __builtin_memcpy(&d, block, 2);
  return _cvtsh_ss(d);
}
inline __mmask16 tail_mask(size_t rem) { return __mmask16((1u << rem) - 1u); }
inline __mmask16 mask16_of(size_t n) { return n >= 16 ? __mmask16(0xffff) : tail_mask(n); }

// GEMVs stream their weights once, prefetching this far ahead of each row. Decode rows are
// read as 4 streams far apart (row_streams.hpp), which want a much shorter distance than one
// stream: 4 x 8 KiB ahead crowds the L1 and the miss buffers (docs/performance.md).
constexpr size_t kFarRowsPrefetchBytes = 1024;
// Q8_0 rows are denser (34 bytes per 32 weights against 64 for bf16) and take more work per
// byte: prefetched 2 KiB ahead, once per block (the best distance measured).
constexpr size_t kQ8RowPrefetchBytes = 2048;
inline void prefetch_far_row(const void* p) {
  _mm_prefetch(static_cast<const char*>(p) + kFarRowsPrefetchBytes, _MM_HINT_T0);
}
// The one-token 16-bit GEMV, which does the least work per byte, prefetches into L2 only: its
// prefetches into L1 kept the miss buffers from the demand loads (a Zen 4 runs the bf16
// projections 6-14 % faster so). Not the MXFP4, Q8_0 and f32 GEMVs, busier per byte (no gain),
// nor the two-token pairs, whose L2Ahead already brings the next rows into L2 (9-16 % slower).
template <int T>
inline void prefetch_far_row_16bit(const void* p) {
  _mm_prefetch(static_cast<const char*>(p) + kFarRowsPrefetchBytes,
               T == 1 ? _MM_HINT_T1 : _MM_HINT_T0);
}

template <int R>
void gemv_mxfp4(const Weight& w, size_t r0, size_t step, const float* x, float* y) {
  const __m512 lut = mxfp4_lut();
  const float* st = e8m0_table();
  const size_t nb = w.cols / 32;
  const uint8_t* c[R];
  const uint8_t* s[R];
  __m512 acc[R];
  for (int r = 0; r < R; ++r) {
    c[r] = w.data + (r0 + size_t(r) * step) * w.row_bytes;
    s[r] = w.scales + (r0 + size_t(r) * step) * nb;
    acc[r] = _mm512_setzero_ps();
  }
  for (size_t b = 0; b < nb; ++b) {
    const __m512 xe = _mm512_loadu_ps(x + 32 * b), xo = _mm512_loadu_ps(x + 32 * b + 16);
    for (int r = 0; r < R; ++r) {
      if (b % 4 == 0) prefetch_far_row(c[r] + 16 * b);
      const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c[r] + 16 * b)));
      // The weights scaled first (exact: a power of two), then the panels' arithmetic.
      const __m512 sc = _mm512_set1_ps(st[s[r][b]]);
      const __m512 lo =
          _mm512_mul_ps(_mm512_permutexvar_ps(q, lut), sc);  // low 4 bits of each lane
      const __m512 hi = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), lut), sc);
      acc[r] = _mm512_fmadd_ps(hi, xo, _mm512_fmadd_ps(lo, xe, acc[r]));
    }
  }
  for (int r = 0; r < R; ++r) y[size_t(r) * step] = _mm512_reduce_add_ps(acc[r]);
}

// R rows interleaved, each with one accumulator per token: k in steps of 16, a masked tail,
// then _mm512_reduce_add_ps, exactly the panels' tiles' arithmetic (tile below), so a row's
// result does not depend on the path (4 rows x 1 to 2 tokens are enough chains to hide the FMA
// latency of a memory-bound GEMV). The caller passes rows far apart (row_streams.hpp): 4
// adjacent rows stream slower than one row alone.
// bf16 and f16 rows: 16 values widened per load (a shift for bf16, vcvtph2ps for f16).
using Widen16 = __m512 (*)(const uint16_t*);
using Widen16Masked = __m512 (*)(const uint16_t*, __mmask16);
// T tokens (x + t * ldx, y + t * ldy) share each weight load.
template <int R, int T, Widen16 Load, Widen16Masked LoadMasked>
void gemv_16bit(const Weight& w, size_t r0, size_t step, const float* x, size_t ldx, float* y,
                size_t ldy, L2Ahead* ahead) {
  const size_t K = w.cols;
  const uint16_t* row[R];
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    row[r] = reinterpret_cast<const uint16_t*>(w.data + (r0 + size_t(r) * step) * w.row_bytes);
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  size_t k = 0;
  for (; k + 32 <= K; k += 32) {
    __m512 x0[T], x1[T];
    for (int t = 0; t < T; ++t) {
      x0[t] = _mm512_loadu_ps(x + size_t(t) * ldx + k);
      x1[t] = _mm512_loadu_ps(x + size_t(t) * ldx + k + 16);
    }
    if (ahead != nullptr) ahead->step();
    for (int r = 0; r < R; ++r) {
      prefetch_far_row_16bit<T>(row[r] + k);
      const __m512 w0 = Load(row[r] + k), w1 = Load(row[r] + k + 16);
      for (int t = 0; t < T; ++t)
        acc[r][t] = _mm512_fmadd_ps(w1, x1[t], _mm512_fmadd_ps(w0, x0[t], acc[r][t]));
    }
  }
  for (; k < K; k += 16) {
    const __mmask16 m = tail_mask(K - k < 16 ? K - k : 16);
    __m512 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm512_maskz_loadu_ps(m, x + size_t(t) * ldx + k);
    for (int r = 0; r < R; ++r) {
      const __m512 wv = LoadMasked(row[r] + k, m);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      y[size_t(t) * ldy + size_t(r) * step] = _mm512_reduce_add_ps(acc[r][t]);
}
template <int R>
void gemv_bf16(const Weight& w, size_t r0, size_t step, const float* x, float* y) {
  gemv_16bit<R, 1, bf16x16, bf16x16_masked>(w, r0, step, x, 0, y, 0, nullptr);
}
template <int R>
void gemv_f16(const Weight& w, size_t r0, size_t step, const float* x, float* y) {
  gemv_16bit<R, 1, f16x16, f16x16_masked>(w, r0, step, x, 0, y, 0, nullptr);
}
template <int R>
void gemv2_bf16(const Weight& w, size_t r0, size_t step, const float* x, size_t ldx, float* y, size_t ldy,
                L2Ahead* ahead) {
  gemv_16bit<R, 2, bf16x16, bf16x16_masked>(w, r0, step, x, ldx, y, ldy, ahead);
}
template <int R>
void gemv4_bf16(const Weight& w, size_t r0, size_t step, const float* x, size_t ldx, float* y,
                size_t ldy, L2Ahead* ahead) {
  gemv_16bit<R, 4, bf16x16, bf16x16_masked>(w, r0, step, x, ldx, y, ldy, ahead);
}
template <int R>
void gemv2_f16(const Weight& w, size_t r0, size_t step, const float* x, size_t ldx, float* y,
               size_t ldy, L2Ahead* ahead) {
  gemv_16bit<R, 2, f16x16, f16x16_masked>(w, r0, step, x, ldx, y, ldy, ahead);
}

// Q8_0 (ggml: 34-byte blocks of f16 d and 32 int8 q, cols % 32 == 0): per block the weights
// q * d, then the panels' arithmetic. T tokens (x + t * ldx, y + t * ldy) share each block's
// widening.
template <int R, int T>
void gemv_q8_0_tokens(const Weight& w, size_t r0, size_t step, const float* x, size_t ldx, float* y,
                      size_t ldy, L2Ahead* ahead) {
  const size_t nb = w.cols / 32;
  const uint8_t* row[R];
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    row[r] = w.data + (r0 + size_t(r) * step) * w.row_bytes;
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (size_t b = 0; b < nb; ++b) {
    if (ahead != nullptr) ahead->step();
    __m512 x0[T], x1[T];
    for (int t = 0; t < T; ++t) {
      x0[t] = _mm512_loadu_ps(x + size_t(t) * ldx + 32 * b);
      x1[t] = _mm512_loadu_ps(x + size_t(t) * ldx + 32 * b + 16);
    }
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = row[r] + 34 * b;
      _mm_prefetch(reinterpret_cast<const char*>(blk) + kQ8RowPrefetchBytes, _MM_HINT_T0);
      // The weights decoded first (q * d), then the panels' arithmetic.
      const __m512 d = _mm512_set1_ps(q8_0_scale(blk));
      const __m512 w0 = _mm512_mul_ps(q8_0_half(blk, 0), d),
                   w1 = _mm512_mul_ps(q8_0_half(blk, 1), d);
      for (int t = 0; t < T; ++t)
        acc[r][t] = _mm512_fmadd_ps(w1, x1[t], _mm512_fmadd_ps(w0, x0[t], acc[r][t]));
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) y[size_t(t) * ldy + size_t(r) * step] = _mm512_reduce_add_ps(acc[r][t]);
}
template <int R>
void gemv_q8_0(const Weight& w, size_t r0, size_t step, const float* x, float* y) {
  gemv_q8_0_tokens<R, 1>(w, r0, step, x, 0, y, 0, nullptr);
}
template <int R>
void gemv2_q8_0(const Weight& w, size_t r0, size_t step, const float* x, size_t ldx, float* y, size_t ldy,
                L2Ahead* ahead) {
  gemv_q8_0_tokens<R, 2>(w, r0, step, x, ldx, y, ldy, ahead);
}
template <int R>
void gemv4_q8_0(const Weight& w, size_t r0, size_t step, const float* x, size_t ldx, float* y,
                size_t ldy, L2Ahead* ahead) {
  gemv_q8_0_tokens<R, 4>(w, r0, step, x, ldx, y, ldy, ahead);
}

template <int R>
void gemv_f32(const Weight& w, size_t r0, size_t step, const float* x, float* y) {
  const size_t K = w.cols;
  const float* row[R];
  __m512 acc[R];
  for (int r = 0; r < R; ++r) {
    row[r] = reinterpret_cast<const float*>(w.data + (r0 + size_t(r) * step) * w.row_bytes);
    acc[r] = _mm512_setzero_ps();
  }
  size_t k = 0;
  for (; k + 16 <= K; k += 16) {
    const __m512 xv = _mm512_loadu_ps(x + k);
    for (int r = 0; r < R; ++r) {
      prefetch_far_row(row[r] + k);
      acc[r] = _mm512_fmadd_ps(_mm512_loadu_ps(row[r] + k), xv, acc[r]);
    }
  }
  if (k < K) {
    const __mmask16 m = tail_mask(K - k);
    const __m512 xv = _mm512_maskz_loadu_ps(m, x + k);
    for (int r = 0; r < R; ++r)
      acc[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, row[r] + k), xv, acc[r]);
  }
  for (int r = 0; r < R; ++r) y[size_t(r) * step] = _mm512_reduce_add_ps(acc[r]);
}

// Rows [r0, r0 + n) of w into panel (row stride w.cols), fp32, kernel order.
void decode_panel(const Weight& w, size_t r0, size_t n, float* panel) {
  const size_t K = w.cols;
  if (w.dtype == gptoss_dtype_mxfp4) {
    const __m512 lut = mxfp4_lut();
    const float* st = e8m0_table();
    for (size_t r = 0; r < n; ++r) {
      const uint8_t* c = w.data + (r0 + r) * w.row_bytes;
      const uint8_t* s = w.scales + (r0 + r) * (K / 32);
      float* o = panel + r * K;
      for (size_t b = 0; b < K / 32; ++b) {
        const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + 16 * b)));
        const __m512 sc = _mm512_set1_ps(st[s[b]]);
        _mm512_storeu_ps(o + 32 * b, _mm512_mul_ps(_mm512_permutexvar_ps(q, lut), sc));
        _mm512_storeu_ps(o + 32 * b + 16,
                         _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), lut), sc));
      }
    }
  } else if (w.dtype == gptoss_dtype_q8_0) {
    for (size_t r = 0; r < n; ++r) {
      const uint8_t* src = w.data + (r0 + r) * w.row_bytes;
      float* o = panel + r * K;
      for (size_t b = 0; b < K / 32; ++b) {
        const uint8_t* blk = src + 34 * b;
        const __m512 d = _mm512_set1_ps(q8_0_scale(blk));
        _mm512_storeu_ps(o + 32 * b, _mm512_mul_ps(q8_0_half(blk, 0), d));
        _mm512_storeu_ps(o + 32 * b + 16, _mm512_mul_ps(q8_0_half(blk, 1), d));
      }
    }
  } else {  // bf16, f16
    const bool half = w.dtype == gptoss_dtype_f16;
    for (size_t r = 0; r < n; ++r) {
      const uint16_t* src = reinterpret_cast<const uint16_t*>(w.data + (r0 + r) * w.row_bytes);
      float* o = panel + r * K;
      size_t k = 0;
      for (; k + 16 <= K; k += 16) _mm512_storeu_ps(o + k, half ? f16x16(src + k) : bf16x16(src + k));
      if (k < K) {
        const __mmask16 m = tail_mask(K - k);
        _mm512_mask_storeu_ps(o + k, m, half ? f16x16_masked(src + k, m) : bf16x16_masked(src + k, m));
      }
    }
  }
}

// y[n * ldy + r] = dot(w + r * ldw, x + n * ldx) over K, for r < TR, n < TN, in passes over
// k in [k0, k1) (TileFn, matmul_driver.hpp).
template <int TR, int TN>
void tile(const float* w, size_t ldw, const float* x, size_t ldx, size_t k0, size_t k1, size_t K,
          float* state, float* y, size_t ldy) {
  __m512 acc[TR][TN];
  for (int r = 0; r < TR; ++r)
    for (int n = 0; n < TN; ++n)
      acc[r][n] = k0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(state + 16 * size_t(r * TN + n));
  size_t k = k0;
  for (; k + 16 <= k1; k += 16) {
    __m512 xv[TN];
    for (int n = 0; n < TN; ++n) xv[n] = _mm512_loadu_ps(x + size_t(n) * ldx + k);
    for (int r = 0; r < TR; ++r) {
      const __m512 wv = _mm512_loadu_ps(w + size_t(r) * ldw + k);
      for (int n = 0; n < TN; ++n) acc[r][n] = _mm512_fmadd_ps(wv, xv[n], acc[r][n]);
    }
  }
  if (k < k1) {  // the tail of the last pass
    const __mmask16 m = tail_mask(k1 - k);
    __m512 xv[TN];
    for (int n = 0; n < TN; ++n) xv[n] = _mm512_maskz_loadu_ps(m, x + size_t(n) * ldx + k);
    for (int r = 0; r < TR; ++r) {
      const __m512 wv = _mm512_maskz_loadu_ps(m, w + size_t(r) * ldw + k);
      for (int n = 0; n < TN; ++n) acc[r][n] = _mm512_fmadd_ps(wv, xv[n], acc[r][n]);
    }
  }
  for (int r = 0; r < TR; ++r)
    for (int n = 0; n < TN; ++n) {
      if (k1 == K) y[size_t(n) * ldy + size_t(r)] = _mm512_reduce_add_ps(acc[r][n]);
      else _mm512_storeu_ps(state + 16 * size_t(r * TN + n), acc[r][n]);
    }
}

// clang-format off
const MatmulKernels<4> kMatmul = {
    {
        // dtype             gemv                            gemv2 (two tokens)              gemv4 (four tokens)
        {gptoss_dtype_mxfp4, {gemv_mxfp4<4>, gemv_mxfp4<1>}, {nullptr, nullptr},             {nullptr, nullptr}},
        {gptoss_dtype_bf16,  {gemv_bf16<4>, gemv_bf16<1>},   {gemv2_bf16<4>, gemv2_bf16<1>}, {gemv4_bf16<4>, gemv4_bf16<1>}},
        {gptoss_dtype_f16,   {gemv_f16<4>, gemv_f16<1>},     {gemv2_f16<4>, gemv2_f16<1>},   {nullptr, nullptr}},
        {gptoss_dtype_q8_0,  {gemv_q8_0<4>, gemv_q8_0<1>},   {gemv2_q8_0<4>, gemv2_q8_0<1>}, {gemv4_q8_0<4>, gemv4_q8_0<1>}},
        {gptoss_dtype_f32,   {gemv_f32<4>, gemv_f32<1>},     {nullptr, nullptr},             {nullptr, nullptr}},
    },
    decode_panel,
    {
      {tile<1, 1>, tile<1, 2>, tile<1, 3>, tile<1, 4>},
      {tile<2, 1>, tile<2, 2>, tile<2, 3>, tile<2, 4>},
      {tile<3, 1>, tile<3, 2>, tile<3, 3>, tile<3, 4>},
      {tile<4, 1>, tile<4, 2>, tile<4, 3>, tile<4, 4>},
    },
};
// clang-format on

}  // namespace

namespace avx512 {
void matmul(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx, size_t n_tok,
            float* y, size_t ldy) {
  matmul_with<kMatmul>(w, r0, n_rows, x, ldx, n_tok, y, ldy);
}
extern const Fp32Paths kFp32Paths;
const Fp32Paths kFp32Paths = fp32_paths<kMatmul>();

}  // namespace avx512

namespace {

// exp(x) for the SwiGLU: Cody-Waite reduction x = n ln2 + r, |r| <= ln2 / 2, degree-7 Taylor
// polynomial (truncation error 6e-9 relative), scaled by 2^n through the exponent bits.
// Inputs are clamped to [-87.3, 88.7] (2^n stays a normal float or becomes inf).
inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-87.3f), _mm512_min_ps(_mm512_set1_ps(88.7f), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  for (float c : {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f})
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

// 16 pairs at a time: even/odd lanes of two vectors split by permutes.
}  // namespace

namespace avx512 {
void swiglu(const float* h, const float* b, size_t n, float limit, float* out) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512 lim = _mm512_set1_ps(limit), neg_lim = _mm512_set1_ps(-limit);
  for (size_t i = 0; i < n; i += 16) {
    const size_t m = n - i < 16 ? n - i : 16;
    const __mmask16 lo = m >= 8 ? __mmask16(0xffff) : __mmask16((1u << (2 * m)) - 1);
    const __mmask16 hi = m <= 8 ? __mmask16(0) : __mmask16((1u << (2 * (m - 8))) - 1);
    __m512 a = _mm512_maskz_loadu_ps(lo, h + 2 * i), c = _mm512_maskz_loadu_ps(hi, h + 2 * i + 16);
    if (b != nullptr) {
      a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(lo, b + 2 * i));
      c = _mm512_add_ps(c, _mm512_maskz_loadu_ps(hi, b + 2 * i + 16));
    }
    // min(limit, g) keeps a NaN g as std::min(g, limit) does.
    const __m512 g = _mm512_min_ps(lim, _mm512_permutex2var_ps(a, even, c));
    const __m512 l = _mm512_max_ps(neg_lim, _mm512_min_ps(lim, _mm512_permutex2var_ps(a, odd, c)));
    const __m512 sig = _mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f),
                                                      exp16(_mm512_mul_ps(_mm512_set1_ps(-1.702f), g))));
    _mm512_mask_storeu_ps(out + i, mask16_of(m), _mm512_mul_ps(sig, _mm512_add_ps(l, _mm512_set1_ps(1.0f))));
  }
}

}  // namespace avx512

namespace avx512 {
// 16 values at a time: exp16 of (x - shift) (NaN lanes masked to 0), each half widened to
// double and added to its own accumulator.
double sum_exp(const float* x, size_t n, float shift) {
  const __m512 s = _mm512_set1_ps(shift);
  __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 m = mask16_of(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __mmask16 ok = _mm512_mask_cmp_ps_mask(m, v, v, _CMP_EQ_OQ);  // in range, not NaN
    const __m512 e = _mm512_maskz_mov_ps(ok, exp16(_mm512_sub_ps(v, s)));
    acc0 = _mm512_add_pd(acc0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    acc1 = _mm512_add_pd(acc1, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
  }
  return _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1));
}

}  // namespace avx512

}  // namespace gptoss::cpu
