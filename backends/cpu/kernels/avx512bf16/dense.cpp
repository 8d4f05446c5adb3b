// The avx512bf16 level's dense matmul over bf16 pairs (DenseBf16Kernels, dense_bf16_kernels.hpp),
// built with -mavx512bf16 on top of the AVX-512 flags.
//
// A GEMV kernel: 4 rows far apart (row_streams.hpp) times up to 4 tokens, one accumulator per
// (row, token), each taking 32 weights per vdpbf16ps. The tokens share every weight load. More
// than 4 go in groups of 4 over L2-sized blocks of rows: a group's pairs (23 KiB) stay in L1,
// the block's weights come from memory once, and the groups after the first bring the next
// block into L2 (L2Ahead) while they compute from this one: faster than one group of 8, whose
// pairs spill to L2 (docs/performance.md).
#include <algorithm>
#include <immintrin.h>

#include "cpu_backend.hpp"
#include "dense_bf16_kernels.hpp"
#include "row_streams.hpp"

namespace gptoss::cpu {
namespace {

// As the fp32 bf16 GEMV (avx512/matmul.cpp): 4 rows far apart, each prefetched 1 KiB ahead,
// into L2 only for one token.
constexpr size_t kFarRowsPrefetchBytes = 1024;
constexpr size_t kGroupTokens = 4;

inline __m512bh as_bh(__m512i v) { return reinterpret_cast<__m512bh>(v); }

template <int R, int T>
void gemv_pairs(const Weight& w, size_t r0, size_t step, const float* x2, size_t ldx2, float* y,
                size_t ldy, L2Ahead* ahead) {
  const size_t K = w.cols;
  const uint16_t* row[R];
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    row[r] = reinterpret_cast<const uint16_t*>(w.data + (r0 + size_t(r) * step) * w.row_bytes);
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  // Whole vectors by plain loads, a row's tail (the pairs are padded to whole vectors with
  // zeros) by a masked one after the loop: a masked load in the main loop, even with an
  // all-ones mask, defeats the hardware prefetcher (avx512vnni/int8.cpp).
  size_t k = 0;
  for (; k + 32 <= K; k += 32) {
    if (ahead != nullptr) ahead->step();
    __m512i xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm512_loadu_si512(x2 + size_t(t) * ldx2 + k / 2);
    for (int r = 0; r < R; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(row[r] + k) + kFarRowsPrefetchBytes,
                   T == 1 ? _MM_HINT_T1 : _MM_HINT_T0);
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

// Up to 4 tokens of a group: 4 rows far apart (16 accumulators).
template <int T>
void rows_for_tokens(const Weight& w, size_t r0, size_t n_rows, const float* x2, size_t ldx2,
                     float* y, size_t ldy, L2Ahead* ahead) {
  const auto four = [&](size_t i, size_t step) { gemv_pairs<4, T>(w, r0 + i, step, x2, ldx2, y + i, ldy, ahead); };
  const auto one = [&](size_t i) { gemv_pairs<1, T>(w, r0 + i, 1, x2, ldx2, y + i, ldy, ahead); };
  for_each_row_quad(n_rows, four, one);
}

void rows_for_group(const Weight& w, size_t r0, size_t n_rows, const float* x2, size_t ldx2,
                    size_t n_tok, float* y, size_t ldy, L2Ahead* ahead) {
  switch (n_tok) {
    case 1: return rows_for_tokens<1>(w, r0, n_rows, x2, ldx2, y, ldy, ahead);
    case 2: return rows_for_tokens<2>(w, r0, n_rows, x2, ldx2, y, ldy, ahead);
    case 3: return rows_for_tokens<3>(w, r0, n_rows, x2, ldx2, y, ldy, ahead);
    default: return rows_for_tokens<4>(w, r0, n_rows, x2, ldx2, y, ldy, ahead);
  }
}

void matmul(const Weight& w, size_t r0, size_t n_rows, const float* x2, size_t ldx2, size_t n_tok,
            float* y, size_t ldy) {
  if (n_tok <= kGroupTokens) return rows_for_group(w, r0, n_rows, x2, ldx2, n_tok, y, ldy, nullptr);
  const size_t groups = (n_tok + kGroupTokens - 1) / kGroupTokens;
  L2Ahead ahead;
  for_each_token_block(n_rows, w.row_bytes, groups, [&](size_t b, size_t n, size_t g) {
    if (g == 0) {
      // The rows after the block: the call's next block, or after its last the rows that follow.
      const size_t steps = (groups - 1) * (n / 4 + n % 4) * (w.cols / 32);
      ahead = L2Ahead::over(w.data, w.row_bytes, r0 + b + n, n, w.rows, steps);
    }
    const size_t t0 = g * kGroupTokens, tn = std::min(kGroupTokens, n_tok - t0);
    rows_for_group(w, r0 + b, n, x2 + t0 * ldx2, ldx2, tn, y + t0 * ldy + b, ldy, g == 0 ? nullptr : &ahead);
  });
}

}  // namespace

namespace avx512bf16 {
extern const DenseBf16Kernels kDenseBf16;
const DenseBf16Kernels kDenseBf16 = {.matmul = matmul};
}  // namespace avx512bf16

}  // namespace gptoss::cpu
