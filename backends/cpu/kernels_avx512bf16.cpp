// AVX512-BF16 dense matmul over bf16 pairs (DenseBf16Kernels, dense_bf16_kernels.hpp). Built
// with -mavx512bf16 on top of the AVX-512 flags and only called when cpuid reports it.
//
// A GEMV kernel: R rows far apart (row_streams.hpp) times T tokens, one accumulator per
// (row, token), each taking 32 weights per vdpbf16ps: 4 rows for up to 4 tokens, 2 rows for 5
// to 8 (16 accumulators either way). The tokens share every weight load; more than 8 go through
// L2-sized blocks of rows in groups of 8, so their weights come from memory once per block.
// (8 tokens of 32768x2880 in one group or as two groups of 4 over the blocks: 10.0 ms both.)
#include <immintrin.h>

#include "cpu_backend.hpp"
#include "dense_bf16_kernels.hpp"
#include "row_streams.hpp"

namespace gptoss::cpu {
namespace {

// As the fp32 bf16 GEMV (kernels_avx512.cpp): 4 rows far apart, each prefetched 1 KiB ahead.
constexpr size_t kFarRowsPrefetchBytes = 1024;
constexpr size_t kMaxTokens = 8;

inline __m512bh as_bh(__m512i v) { return reinterpret_cast<__m512bh>(v); }

template <int R, int T>
void gemv_pairs(const Weight& w, size_t r0, size_t step, const float* x2, size_t ldx2, float* y,
                size_t ldy) {
  const size_t K = w.cols;
  const uint16_t* row[R];
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    row[r] = reinterpret_cast<const uint16_t*>(w.data + (r0 + size_t(r) * step) * w.row_bytes);
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  // Whole vectors by plain loads, a row's tail (the pairs are padded to whole vectors with
  // zeros) by a masked one after the loop: a masked load in the main loop, even with an
  // all-ones mask, defeats the hardware prefetcher (kernels_avx512vnni.cpp).
  size_t k = 0;
  for (; k + 32 <= K; k += 32) {
    __m512i xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm512_loadu_si512(x2 + size_t(t) * ldx2 + k / 2);
    for (int r = 0; r < R; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(row[r] + k) + kFarRowsPrefetchBytes, _MM_HINT_T0);
      const __m512i wv = _mm512_loadu_si512(row[r] + k);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], as_bh(wv), as_bh(xv[t]));
    }
  }
  if (k < K) {
    const __mmask32 m = __mmask32((1u << (K - k)) - 1u);
    __m512i xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm512_loadu_si512(x2 + size_t(t) * ldx2 + k / 2);
    for (int r = 0; r < R; ++r) {
      const __m512i wv = _mm512_maskz_loadu_epi16(m, row[r] + k);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], as_bh(wv), as_bh(xv[t]));
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) y[size_t(t) * ldy + size_t(r) * step] = _mm512_reduce_add_ps(acc[r][t]);
}

// Up to 4 tokens: 4 rows far apart; 5 to 8: 2 rows (16 accumulators either way).
template <int T>
void rows_for_tokens(const Weight& w, size_t r0, size_t n_rows, const float* x2, size_t ldx2,
                     float* y, size_t ldy) {
  constexpr int R = T <= 4 ? 4 : 2;
  const auto some = [&](size_t i, size_t step) { gemv_pairs<R, T>(w, r0 + i, step, x2, ldx2, y + i, ldy); };
  const auto one = [&](size_t i) { gemv_pairs<1, T>(w, r0 + i, 1, x2, ldx2, y + i, ldy); };
  if constexpr (R == 4) for_each_row_quad(n_rows, some, one);
  else for_each_row_pair(n_rows, some, one);
}

void rows_for_group(const Weight& w, size_t r0, size_t n_rows, const float* x2, size_t ldx2,
                    size_t n_tok, float* y, size_t ldy) {
  switch (n_tok) {
    case 1: return rows_for_tokens<1>(w, r0, n_rows, x2, ldx2, y, ldy);
    case 2: return rows_for_tokens<2>(w, r0, n_rows, x2, ldx2, y, ldy);
    case 3: return rows_for_tokens<3>(w, r0, n_rows, x2, ldx2, y, ldy);
    case 4: return rows_for_tokens<4>(w, r0, n_rows, x2, ldx2, y, ldy);
    case 5: return rows_for_tokens<5>(w, r0, n_rows, x2, ldx2, y, ldy);
    case 6: return rows_for_tokens<6>(w, r0, n_rows, x2, ldx2, y, ldy);
    case 7: return rows_for_tokens<7>(w, r0, n_rows, x2, ldx2, y, ldy);
    default: return rows_for_tokens<8>(w, r0, n_rows, x2, ldx2, y, ldy);
  }
}

void matmul(const Weight& w, size_t r0, size_t n_rows, const float* x2, size_t ldx2, size_t n_tok,
            float* y, size_t ldy) {
  if (n_tok <= kMaxTokens) return rows_for_group(w, r0, n_rows, x2, ldx2, n_tok, y, ldy);
  const size_t groups = (n_tok + kMaxTokens - 1) / kMaxTokens;
  for_each_token_block(n_rows, w.row_bytes, groups, [&](size_t b, size_t n, size_t g) {
    const size_t t0 = g * kMaxTokens, tn = n_tok - t0 < kMaxTokens ? n_tok - t0 : kMaxTokens;
    rows_for_group(w, r0 + b, n, x2 + t0 * ldx2, ldx2, tn, y + t0 * ldy + b, ldy);
  });
}

}  // namespace

extern const DenseBf16Kernels* const kDenseBf16KernelsAvx512;
const DenseBf16Kernels kDenseBf16KernelsAvx512Table = {matmul};
const DenseBf16Kernels* const kDenseBf16KernelsAvx512 = &kDenseBf16KernelsAvx512Table;

}  // namespace gptoss::cpu
