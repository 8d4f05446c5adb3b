// fp32 GEMM for prefill-sized batches of bf16, f16, Q8_0 and f32 weights at the AVX-512 levels
// (the dense projections, in every precision). The register-tile GEMM of matmul_driver.hpp reads a
// 4-row x 4-token tile's weights and activations from L2 for every 16 multiply-adds: L2
// bandwidth, not the FMA units, bounds it. Here:
//   - 32 weight rows are widened to fp32 and transposed (k-major: 32 floats per k) once;
//   - K is cut into chunks of kChunk, small enough that the chunk of the panel (16 KiB) and of
//     a token tile's activations stay in L1 while every token tile passes over them;
//   - the micro-kernel keeps 32 rows x kTileTokens tokens of y in 24 accumulators and, per k,
//     does 2 weight loads, kTileTokens broadcasts and 2 * kTileTokens FMAs (outer product).
// Sums run over k in order within a chunk and chunk after chunk, so results do not depend on
// how tokens are tiled.
#include <immintrin.h>

#include "cpu_backend.hpp"
#include "kernels.hpp"

namespace gptoss::cpu {
namespace {

constexpr size_t kRows = 32, kChunk = 128, kTileTokens = 12;

// dst[k * ldd + r] = src[r * lds + k] for r, k < 16.
void transpose16(const float* src, size_t lds, float* dst, size_t ldd) {
  __m512 r[16], a[16], b[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(src + size_t(i) * lds);
  for (int i = 0; i < 16; i += 2) {
    a[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    a[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4)
    for (int j = 0; j < 2; ++j) {
      const __m512d lo = _mm512_castps_pd(a[i + j]), hi = _mm512_castps_pd(a[i + j + 2]);
      b[i + 2 * j] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo, hi));
      b[i + 2 * j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo, hi));
    }
  // b[4g + j], lane L: element 4L + j of rows 4g .. 4g + 3.
  for (int j = 0; j < 4; ++j) {
    const __m512 c = _mm512_shuffle_f32x4(b[j], b[4 + j], 0x88), d = _mm512_shuffle_f32x4(b[j], b[4 + j], 0xdd);
    const __m512 e = _mm512_shuffle_f32x4(b[8 + j], b[12 + j], 0x88), f = _mm512_shuffle_f32x4(b[8 + j], b[12 + j], 0xdd);
    _mm512_storeu_ps(dst + size_t(j) * ldd, _mm512_shuffle_f32x4(c, e, 0x88));
    _mm512_storeu_ps(dst + size_t(8 + j) * ldd, _mm512_shuffle_f32x4(c, e, 0xdd));
    _mm512_storeu_ps(dst + size_t(4 + j) * ldd, _mm512_shuffle_f32x4(d, f, 0x88));
    _mm512_storeu_ps(dst + size_t(12 + j) * ldd, _mm512_shuffle_f32x4(d, f, 0xdd));
  }
}

// Rows [r0, r0 + n) (n <= 32; missing rows zero) of a bf16, f16, Q8_0 or f32 w, as fp32, into
// panel[k * 32 + r] for k < Kp (K rounded up to 16; padding zero). rows: scratch of 16 * Kp.
void pack_panel(const Weight& w, size_t r0, size_t n, size_t Kp, float* rows, float* panel) {
  const size_t K = w.cols;
  for (size_t h = 0; h < 2; ++h) {
    for (size_t i = 0; i < 16; ++i) {
      float* dst = rows + i * Kp;
      const size_t r = 16 * h + i;
      if (r >= n) {
        for (size_t k = 0; k < Kp; ++k) dst[k] = 0.0f;
        continue;
      }
      if (w.dtype == gptoss_dtype_bf16 || w.dtype == gptoss_dtype_f16) {
        const uint16_t* src = reinterpret_cast<const uint16_t*>(w.data + (r0 + r) * w.row_bytes);
        const bool half = w.dtype == gptoss_dtype_f16;
        for (size_t k = 0; k < Kp; k += 16) {
          const __mmask16 m = K - k >= 16 ? __mmask16(0xffff) : __mmask16((1u << (K - k)) - 1);
          const __m256i h = _mm256_maskz_loadu_epi16(m, src + k);
          _mm512_storeu_ps(dst + k, half ? _mm512_cvtph_ps(h)
                                         : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
        }
      } else if (w.dtype == gptoss_dtype_q8_0) {  // K % 32 == 0, so Kp == K
        const uint8_t* src = w.data + (r0 + r) * w.row_bytes;
        for (size_t b = 0; b < K / 32; ++b) {
          const uint8_t* blk = src + 34 * b;
          uint16_t d16;
          __builtin_memcpy(&d16, blk, 2);
          const __m512 d = _mm512_set1_ps(_cvtsh_ss(d16));
          for (size_t h = 0; h < 2; ++h) {
            const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2 + 16 * h));
            _mm512_storeu_ps(dst + 32 * b + 16 * h, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), d));
          }
        }
      } else {
        const float* src = reinterpret_cast<const float*>(w.data + (r0 + r) * w.row_bytes);
        for (size_t k = 0; k < Kp; ++k) dst[k] = k < K ? src[k] : 0.0f;
      }
    }
    for (size_t k = 0; k < Kp; k += 16) transpose16(rows + k, Kp, panel + k * kRows + 16 * h, kRows);
  }
}

// y[n * ldy + r] (+)= sum over k in [k0, k1) of panel[k * 32 + r] * x[n * ldx + k], for
// r < 32 (stores masked to n_rows), n < TN.
template <int TN>
void tile(const float* panel, const float* x, size_t ldx, size_t k0, size_t k1, float* y,
          size_t ldy, bool first, __mmask16 m0, __mmask16 m1) {
  __m512 acc[2][TN];
  for (int n = 0; n < TN; ++n) {
    acc[0][n] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m0, y + size_t(n) * ldy);
    acc[1][n] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m1, y + size_t(n) * ldy + 16);
  }
  for (size_t k = k0; k < k1; ++k) {
    const __m512 w0 = _mm512_load_ps(panel + k * kRows), w1 = _mm512_load_ps(panel + k * kRows + 16);
    for (int n = 0; n < TN; ++n) {
      const __m512 xb = _mm512_set1_ps(x[size_t(n) * ldx + k]);
      acc[0][n] = _mm512_fmadd_ps(w0, xb, acc[0][n]);
      acc[1][n] = _mm512_fmadd_ps(w1, xb, acc[1][n]);
    }
  }
  for (int n = 0; n < TN; ++n) {
    _mm512_mask_storeu_ps(y + size_t(n) * ldy, m0, acc[0][n]);
    _mm512_mask_storeu_ps(y + size_t(n) * ldy + 16, m1, acc[1][n]);
  }
}

using TileFn = void (*)(const float*, const float*, size_t, size_t, size_t, float*, size_t, bool,
                        __mmask16, __mmask16);
const TileFn kTiles[kTileTokens] = {tile<1>, tile<2>, tile<3>, tile<4>,  tile<5>,  tile<6>,
                                    tile<7>, tile<8>, tile<9>, tile<10>, tile<11>, tile<12>};

inline __mmask16 mask16(size_t n) { return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1u); }

}  // namespace

void gemm_f32_avx512(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx,
                     size_t n_tok, float* y, size_t ldy) {
  const size_t K = w.cols, Kp = (K + 15) / 16 * 16;
  // Padding k (K <= k < Kp) multiplies zeros in the panel, but x there is someone else's
  // memory: chunks stop at K.
  float* panel = thread_scratch(Kp * kRows, 3);
  float* rows = thread_scratch(16 * Kp, 1);
  for (size_t p = 0; p < n_rows; p += kRows) {
    const size_t pr = n_rows - p < kRows ? n_rows - p : kRows;
    pack_panel(w, r0 + p, pr, Kp, rows, panel);
    const __mmask16 m0 = mask16(pr), m1 = mask16(pr > 16 ? pr - 16 : 0);
    for (size_t k0 = 0; k0 < K; k0 += kChunk) {
      const size_t k1 = K - k0 < kChunk ? K : k0 + kChunk;
      for (size_t t = 0; t < n_tok; t += kTileTokens) {
        const size_t tn = n_tok - t < kTileTokens ? n_tok - t : kTileTokens;
        kTiles[tn - 1](panel, x + t * ldx, ldx, k0, k1, y + t * ldy + p, ldy, k0 == 0, m0, m1);
      }
    }
  }
}

}  // namespace gptoss::cpu
