// The fp32 kernels of the avx2 level (built with -mavx2 -mfma -mf16c): Kernels::matmul and
// sum_exp, also in the avx2vnni table.
// Same structure as avx512/matmul.cpp with 8-wide vectors; MXFP4 codes are widened with
// a byte shuffle to int8 (2 x the E2M1 value, an exact integer), converted to fp32 and the
// block products scaled by 2^(e-127) / 2 (exact: powers of two).
//   n_tok == 1: 4 rows share every load of x (which rows: row_streams.hpp).
//   2 to 16 tokens of bf16 and f16 rows (a decode step): the same GEMVs on pairs of tokens
//   (matmul_driver.hpp), each token with its one-token result.
//   n_tok > 1 otherwise: 16 rows decoded once into an fp32 panel, then 4 rows x 3 tokens
//   register tiles.
#include <immintrin.h>

#include "cpu_backend.hpp"
#include "kernels.hpp"
#include "matmul_driver.hpp"

namespace gptoss::cpu {
namespace {

// GEMVs stream their weights once, prefetching this far ahead of each row. Decode rows are
// read as 4 streams far apart (row_streams.hpp), which want a much shorter distance than one
// stream: 4 x 8 KiB ahead crowds the L1 and the miss buffers (docs/performance.md).
constexpr size_t kFarRowsPrefetchBytes = 1024;
// Q8_0 rows: 2 KiB ahead, once per block (as avx512/matmul.cpp).
constexpr size_t kQ8RowPrefetchBytes = 2048;
inline void prefetch_far_row(const void* p) {
  _mm_prefetch(static_cast<const char*>(p) + kFarRowsPrefetchBytes, _MM_HINT_T0);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
inline __m128i mxfp4_lut2() {  // 2 x E2M1 value as int8
  return _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
}
inline __m256 i8x8_to_ps(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)); }
inline __m256 bf16x8(const uint16_t* p) {
  return _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}
inline __m256 f16x8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
// Quarter j (j < 4) of the 32 int8 values of a Q8_0 block (34 bytes: f16 d, then q) as floats.
inline __m256 q8_0_quarter(const uint8_t* block, int j) {
  return i8x8_to_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + 8 * j)));
}
inline float q8_0_scale(const uint8_t* block) {
  uint16_t d;
  __builtin_memcpy(&d, block, 2);
  return _cvtsh_ss(d);
}
inline float bf16_scalar(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

// The 32 values of one MXFP4 block as four vectors of 2 x value (kernel order).
inline void mxfp4_block2(const uint8_t* c, __m256 out[4]) {
  const __m128i m4 = _mm_set1_epi8(0x0f), lut = mxfp4_lut2();
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c));
  const __m128i lo = _mm_shuffle_epi8(lut, _mm_and_si128(q, m4));
  const __m128i hi = _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(q, 4), m4));
  out[0] = i8x8_to_ps(lo);
  out[1] = i8x8_to_ps(_mm_srli_si128(lo, 8));
  out[2] = i8x8_to_ps(hi);
  out[3] = i8x8_to_ps(_mm_srli_si128(hi, 8));
}

template <int R>
void gemv_mxfp4(const Weight& w, size_t r0, size_t step, const float* x, float* y) {
  const float* st = e8m0_table();
  const size_t nb = w.cols / 32;
  const uint8_t* c[R];
  const uint8_t* s[R];
  __m256 acc[R];
  for (int r = 0; r < R; ++r) {
    c[r] = w.data + (r0 + size_t(r) * step) * w.row_bytes;
    s[r] = w.scales + (r0 + size_t(r) * step) * nb;
    acc[r] = _mm256_setzero_ps();
  }
  for (size_t b = 0; b < nb; ++b) {
    __m256 xv[4];
    for (int j = 0; j < 4; ++j) xv[j] = _mm256_loadu_ps(x + 32 * b + 8 * size_t(j));
    for (int r = 0; r < R; ++r) {
      if (b % 4 == 0) prefetch_far_row(c[r] + 16 * b);
      // The weights scaled first (exact: powers of two), then the panels' arithmetic.
      __m256 v[4];
      mxfp4_block2(c[r] + 16 * b, v);
      const __m256 sc = _mm256_set1_ps(0.5f * st[s[r][b]]);
      for (int j = 0; j < 4; ++j) acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(v[j], sc), xv[j], acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) y[size_t(r) * step] = hsum(acc[r]);
}

// R rows interleaved (the caller passes rows far apart, see matmul_driver.hpp), one
// accumulator each. bf16 and f16 rows: 8 values widened per load (a shift for bf16, vcvtph2ps
// for f16). T tokens (x + t * ldx, y + t * ldy) share each weight load; every (row, token) gets
// the one-token arithmetic, so T = 2 equals two T = 1 calls bit for bit. One accumulator per
// (row, token): 4 rows x 2 tokens then fit the 16 ymm registers with their activations (two
// accumulators each would take all 16), and 8 independent FMA chains still hide the latency.
using Widen8 = __m256 (*)(const uint16_t*);
using WidenOne = float (*)(uint16_t);
inline float f16_scalar(uint16_t h) { return _cvtsh_ss(h); }
template <int R, int T, Widen8 Load, WidenOne LoadOne>
void gemv_16bit(const Weight& w, size_t r0, size_t step, const float* x, size_t ldx, float* y,
                size_t ldy, L2Ahead* ahead) {
  const size_t K = w.cols;
  const uint16_t* row[R];
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r) {
    row[r] = reinterpret_cast<const uint16_t*>(w.data + (r0 + size_t(r) * step) * w.row_bytes);
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  size_t k = 0;
  for (; k + 16 <= K; k += 16) {
    __m256 x0[T], x1[T];
    for (int t = 0; t < T; ++t) {
      x0[t] = _mm256_loadu_ps(x + size_t(t) * ldx + k);
      x1[t] = _mm256_loadu_ps(x + size_t(t) * ldx + k + 8);
    }
    if (ahead != nullptr) ahead->step();
    for (int r = 0; r < R; ++r) {
      if (k % 32 == 0) prefetch_far_row(row[r] + k);
      const __m256 w0 = Load(row[r] + k), w1 = Load(row[r] + k + 8);
      for (int t = 0; t < T; ++t) {
        acc[r][t] = _mm256_fmadd_ps(w0, x0[t], acc[r][t]);
        acc[r][t] = _mm256_fmadd_ps(w1, x1[t], acc[r][t]);
      }
    }
  }
  const size_t k8 = k + 8 <= K ? k + 8 : k;
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) {
      const float* xt = x + size_t(t) * ldx;
      __m256 a = acc[r][t];
      if (k8 > k) a = _mm256_fmadd_ps(Load(row[r] + k), _mm256_loadu_ps(xt + k), a);
      float sum = hsum(a);
      for (size_t j = k8; j < K; ++j)
        sum = __builtin_fmaf(LoadOne(row[r][j]), xt[j], sum);  // as tile's tail
      y[size_t(t) * ldy + size_t(r) * step] = sum;
    }
}
template <int R>
void gemv_bf16(const Weight& w, size_t r0, size_t step, const float* x, float* y) {
  gemv_16bit<R, 1, bf16x8, bf16_scalar>(w, r0, step, x, 0, y, 0, nullptr);
}
template <int R>
void gemv_f16(const Weight& w, size_t r0, size_t step, const float* x, float* y) {
  gemv_16bit<R, 1, f16x8, f16_scalar>(w, r0, step, x, 0, y, 0, nullptr);
}
template <int R>
void gemv2_bf16(const Weight& w, size_t r0, size_t step, const float* x, size_t ldx, float* y, size_t ldy,
                L2Ahead* ahead) {
  gemv_16bit<R, 2, bf16x8, bf16_scalar>(w, r0, step, x, ldx, y, ldy, ahead);
}
template <int R>
void gemv2_f16(const Weight& w, size_t r0, size_t step, const float* x, size_t ldx, float* y, size_t ldy,
               L2Ahead* ahead) {
  gemv_16bit<R, 2, f16x8, f16_scalar>(w, r0, step, x, ldx, y, ldy, ahead);
}

// Q8_0 (ggml: 34-byte blocks of f16 d and 32 int8 q, cols % 32 == 0): per block the weights
// q * d, then the panels' arithmetic (one accumulator, k in steps of 8, hsum).
template <int R>
void gemv_q8_0(const Weight& w, size_t r0, size_t step, const float* x, float* y) {
  const size_t nb = w.cols / 32;
  const uint8_t* row[R];
  __m256 acc[R];
  for (int r = 0; r < R; ++r) {
    row[r] = w.data + (r0 + size_t(r) * step) * w.row_bytes;
    acc[r] = _mm256_setzero_ps();
  }
  for (size_t b = 0; b < nb; ++b) {
    __m256 xv[4];
    for (int j = 0; j < 4; ++j) xv[j] = _mm256_loadu_ps(x + 32 * b + 8 * size_t(j));
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = row[r] + 34 * b;
      _mm_prefetch(reinterpret_cast<const char*>(blk) + kQ8RowPrefetchBytes, _MM_HINT_T0);
      const __m256 d =
          _mm256_set1_ps(q8_0_scale(blk));  // weights q * d, then the panels' arithmetic
      for (int j = 0; j < 4; ++j)
        acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(q8_0_quarter(blk, j), d), xv[j], acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) y[size_t(r) * step] = hsum(acc[r]);
}

template <int R>
void gemv_f32(const Weight& w, size_t r0, size_t step, const float* x, float* y) {
  const size_t K = w.cols;
  const float* row[R];
  __m256 acc[R];
  for (int r = 0; r < R; ++r) {
    row[r] = reinterpret_cast<const float*>(w.data + (r0 + size_t(r) * step) * w.row_bytes);
    acc[r] = _mm256_setzero_ps();
  }
  size_t k = 0;
  for (; k + 8 <= K; k += 8) {
    const __m256 xv = _mm256_loadu_ps(x + k);
    if (k % 16 == 0)
      for (int r = 0; r < R; ++r) prefetch_far_row(row[r] + k);
    for (int r = 0; r < R; ++r) acc[r] = _mm256_fmadd_ps(_mm256_loadu_ps(row[r] + k), xv, acc[r]);
  }
  for (int r = 0; r < R; ++r) {
    float s = hsum(acc[r]);
    for (size_t j = k; j < K; ++j) s = __builtin_fmaf(row[r][j], x[j], s);  // as tile's tail
    y[size_t(r) * step] = s;
  }
}

void decode_panel(const Weight& w, size_t r0, size_t n, float* panel) {
  const size_t K = w.cols;
  if (w.dtype == gptoss_dtype_mxfp4) {
    const float* st = e8m0_table();
    for (size_t r = 0; r < n; ++r) {
      const uint8_t* c = w.data + (r0 + r) * w.row_bytes;
      const uint8_t* s = w.scales + (r0 + r) * (K / 32);
      float* o = panel + r * K;
      for (size_t b = 0; b < K / 32; ++b) {
        __m256 v[4];
        mxfp4_block2(c + 16 * b, v);
        const __m256 sc = _mm256_set1_ps(0.5f * st[s[b]]);
        for (int j = 0; j < 4; ++j) _mm256_storeu_ps(o + 32 * b + 8 * size_t(j), _mm256_mul_ps(v[j], sc));
      }
    }
  } else if (w.dtype == gptoss_dtype_q8_0) {
    for (size_t r = 0; r < n; ++r) {
      const uint8_t* src = w.data + (r0 + r) * w.row_bytes;
      float* o = panel + r * K;
      for (size_t b = 0; b < K / 32; ++b) {
        const uint8_t* blk = src + 34 * b;
        const __m256 d = _mm256_set1_ps(q8_0_scale(blk));
        for (int j = 0; j < 4; ++j)
          _mm256_storeu_ps(o + 32 * b + 8 * size_t(j), _mm256_mul_ps(q8_0_quarter(blk, j), d));
      }
    }
  } else if (w.dtype == gptoss_dtype_f16) {
    for (size_t r = 0; r < n; ++r) {
      const uint16_t* src = reinterpret_cast<const uint16_t*>(w.data + (r0 + r) * w.row_bytes);
      float* o = panel + r * K;
      size_t k = 0;
      for (; k + 8 <= K; k += 8) _mm256_storeu_ps(o + k, f16x8(src + k));
      for (; k < K; ++k) o[k] = _cvtsh_ss(src[k]);
    }
  } else {  // bf16
    for (size_t r = 0; r < n; ++r) {
      const uint16_t* src = reinterpret_cast<const uint16_t*>(w.data + (r0 + r) * w.row_bytes);
      float* o = panel + r * K;
      size_t k = 0;
      for (; k + 8 <= K; k += 8) _mm256_storeu_ps(o + k, bf16x8(src + k));
      for (; k < K; ++k) o[k] = bf16_scalar(src[k]);
    }
  }
}

// y[n * ldy + r] = dot(w + r * ldw, x + n * ldx) over K, for r < TR, n < TN, in passes over
// k in [k0, k1) (TileFn, matmul_driver.hpp).
template <int TR, int TN>
void tile(const float* w, size_t ldw, const float* x, size_t ldx, size_t k0, size_t k1, size_t K,
          float* state, float* y, size_t ldy) {
  __m256 acc[TR][TN];
  for (int r = 0; r < TR; ++r)
    for (int n = 0; n < TN; ++n)
      acc[r][n] = k0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(state + 8 * size_t(r * TN + n));
  size_t k = k0;
  for (; k + 8 <= k1; k += 8) {
    __m256 xv[TN];
    for (int n = 0; n < TN; ++n) xv[n] = _mm256_loadu_ps(x + size_t(n) * ldx + k);
    for (int r = 0; r < TR; ++r) {
      const __m256 wv = _mm256_loadu_ps(w + size_t(r) * ldw + k);
      for (int n = 0; n < TN; ++n) acc[r][n] = _mm256_fmadd_ps(wv, xv[n], acc[r][n]);
    }
  }
  for (int r = 0; r < TR; ++r)
    for (int n = 0; n < TN; ++n) {
      if (k1 < K) {
        _mm256_storeu_ps(state + 8 * size_t(r * TN + n), acc[r][n]);
        continue;
      }
      float s = hsum(acc[r][n]);
      // The tail one fused multiply-add at a time, as the GEMVs take it (a compiler may
      // contract or vectorize a plain loop differently in each).
      for (size_t j = k; j < K; ++j)
        s = __builtin_fmaf(w[size_t(r) * ldw + j], x[size_t(n) * ldx + j], s);
      y[size_t(n) * ldy + size_t(r)] = s;
    }
}

// Q8_0 has no two-token GEMV here: its rows widen 8 int8 a step at three instructions, and four
// passes of pairs over a block cost more than the fp32 panels (docs/performance.md).
// clang-format off
const MatmulKernels<3> kMatmul = {
    {
        // dtype             gemv                            gemv2 (two tokens)              gemv4 (four tokens)
        {gptoss_dtype_mxfp4, {gemv_mxfp4<4>, gemv_mxfp4<1>}, {nullptr, nullptr},             {nullptr, nullptr}},
        {gptoss_dtype_bf16,  {gemv_bf16<4>, gemv_bf16<1>},   {gemv2_bf16<4>, gemv2_bf16<1>}, {nullptr, nullptr}},
        {gptoss_dtype_f16,   {gemv_f16<4>, gemv_f16<1>},     {gemv2_f16<4>, gemv2_f16<1>},   {nullptr, nullptr}},
        {gptoss_dtype_q8_0,  {gemv_q8_0<4>, gemv_q8_0<1>},   {nullptr, nullptr},             {nullptr, nullptr}},
        {gptoss_dtype_f32,   {gemv_f32<4>, gemv_f32<1>},     {nullptr, nullptr},             {nullptr, nullptr}},
    },
    decode_panel,
    {
        {tile<1, 1>, tile<1, 2>, tile<1, 3>},
        {tile<2, 1>, tile<2, 2>, tile<2, 3>},
        {tile<3, 1>, tile<3, 2>, tile<3, 3>},
        {tile<4, 1>, tile<4, 2>, tile<4, 3>},
    },
};
// clang-format on

}  // namespace

namespace avx2 {
void matmul(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx, size_t n_tok,
            float* y, size_t ldy) {
  matmul_with<kMatmul>(w, r0, n_rows, x, ldx, n_tok, y, ldy);
}
extern const Fp32Paths kFp32Paths;
const Fp32Paths kFp32Paths = fp32_paths<kMatmul>();

}  // namespace avx2

namespace {
// exp(x) on 8 lanes, as exp16 of avx512/matmul.cpp: Cody-Waite reduction, degree-7 Taylor
// polynomial (6e-9 relative), 2^n through the exponent bits; inputs clamped to [-87.3, 88.7].
inline __m256 exp8(__m256 x) {
  x = _mm256_max_ps(_mm256_set1_ps(-87.3f), _mm256_min_ps(_mm256_set1_ps(88.7f), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  for (float c : {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f})
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

}  // namespace

namespace avx2 {
// 8 values at a time (a scalar tail): exp8 of (x - shift), NaN lanes 0, summed in double.
double sum_exp(const float* x, size_t n, float shift) {
  const __m256 s = _mm256_set1_ps(shift);
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 e = _mm256_and_ps(_mm256_cmp_ps(v, v, _CMP_EQ_OQ), exp8(_mm256_sub_ps(v, s)));
    acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(acc0, acc1));
  double sum = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  if (i < n) sum += sum_exp_reference(x + i, n - i, shift);
  return sum;
}

}  // namespace avx2

}  // namespace gptoss::cpu
