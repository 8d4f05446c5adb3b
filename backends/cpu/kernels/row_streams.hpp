#pragma once
// How the decode GEMVs (one token) walk their rows. A GEMV kernel takes 4 rows at a time so
// they share every load of x, and the 4 rows are a quarter of the caller's range apart (rows
// i, i + L, i + 2L, i + 3L): each core reads 4 DRAM streams far apart (8 for MXFP4, with the
// scales), each prefetched a short distance ahead (1 KiB: kFarRowsPrefetchBytes in the kernels;
// the AVX-512 int8 MXFP4 GEMV prefetches its codes into L2 only), the fastest pattern measured
// for the memory-bound GEMVs. The AVX2 int8 kernels (avx2/int8_body.hpp), more compute-bound, keep
// 4 adjacent rows and 8 KiB ahead. (Measurements: docs/performance.md, "CPU kernel choices".) Every
// row gets the same arithmetic from the 4-row and the 1-row kernel, so results do not depend on how
// the caller split the rows (tested).
#include <cstddef>

namespace gptoss::cpu {
namespace {

// four(i, step) computes rows i + r * step for r < 4; one(i) computes row i alone.
template <typename Four, typename One>
inline void for_each_row_quad(size_t n_rows, Four&& four, One&& one) {
  const size_t L = n_rows / 4;
  for (size_t i = 0; i < L; ++i) four(i, L);
  for (size_t i = 4 * L; i < n_rows; ++i) one(i);
}

// The same with 2 rows half the range apart, for kernels whose several tokens leave registers
// for only 2 rows: two(i, step) computes rows i and i + step; one(i) row i alone.
template <typename Two, typename One>
inline void for_each_row_pair(size_t n_rows, Two&& two, One&& one) {
  const size_t L = n_rows / 2;
  for (size_t i = 0; i < L; ++i) two(i, L);
  for (size_t i = 2 * L; i < n_rows; ++i) one(i);
}

// 2 to kGemvTokens tokens (a few sequences decoding together): the one-token GEMV per token,
// over blocks of rows whose weights (kGemvBlockBytes) stay in L2 after the first token reads
// them from memory, so the others re-read them from cache. The panel kernels that serve
// prefill decode the weights into a panel first, a cost only many tokens amortize. The GEMV
// arithmetic of a row does not depend on the block, so every token gets exactly its one-token
// result (tests: kernels_test, ops_test). matmul_with applies it to 2-4 tokens of fp32
// activations; for the int8 MXFP4 kernels the chooser (choose.cpp) applies it to small steps.
constexpr size_t kGemvTokens = 4;
// A decode step of up to this many sequences keeps every token's one-token arithmetic where a
// kernel can do so without re-decoding the weights per token: the int8 MXFP4 GEMV (each
// expert's few tokens: the codes decoded once for up to 4 tokens) and the two-token 16-bit
// GEMV (bf16/f16 rows, in pairs over the L2-sized blocks); faster than the panels for such
// steps on AVX-512 and AVX2 alike (docs/performance.md).
constexpr size_t kGemvStepTokens = 16;
constexpr size_t kGemvBlockBytes = size_t(256) << 10;

inline size_t gemv_block_rows(size_t row_bytes) {
  const size_t block = kGemvBlockBytes / (row_bytes > 0 ? row_bytes : 1) / 4 * 4;
  return block < 4 ? 4 : block;
}

// The next block of rows, brought into L2 while the tokens after the first compute from the
// current one: without it the first token's pass over each block waits on memory while the
// later passes leave it idle (a fifth to a quarter off an 8-token bf16 GEMV). A kernel calls
// step() once per iteration of its inner loop.
struct L2Ahead {
  const char* next = nullptr;
  const char* end = nullptr;
  size_t lines = 0;  // cache lines per step

  // Rows [first, first + n) of a matrix of `rows` rows of `row_bytes` at `data` (clipped to it),
  // spread over `steps` steps.
  static L2Ahead over(const void* data, size_t row_bytes, size_t first, size_t n, size_t rows, size_t steps) {
    const size_t bytes = (first + n <= rows ? n : rows - first) * row_bytes;
    L2Ahead a;
    a.next = static_cast<const char*>(data) + first * row_bytes;
    a.end = a.next + bytes;
    a.lines = steps > 0 ? (bytes / 64 + steps - 1) / steps : 0;
    return a;
  }
  void step() {
    for (size_t i = 0; i < lines && next < end; ++i, next += 64) __builtin_prefetch(next, 0, 2);
  }
};

// gemv(b, n, t): rows [b, b + n) for token t, for every block of rows and every token.
template <typename Gemv>
inline void for_each_token_block(size_t n_rows, size_t row_bytes, size_t n_tok, Gemv&& gemv) {
  const size_t block = gemv_block_rows(row_bytes);
  for (size_t b = 0; b < n_rows; b += block) {
    const size_t n = n_rows - b < block ? n_rows - b : block;
    for (size_t t = 0; t < n_tok; ++t) gemv(b, n, t);
  }
}

}  // namespace
}  // namespace gptoss::cpu
