#pragma once
// The ISA-independent half of the SIMD fp32 matmuls: which row kernel serves which dtype, and
// how the GEMM walks 16-row panels in register tiles. Each level's matmul.cpp fills a
// MatmulKernels with its own intrinsics and calls matmul_with(). Everything here is in an
// anonymous namespace, so each ISA's translation unit (built with its own -m flags) gets its
// own copy and no code compiled for one ISA can be linked into another's.
#include <cstddef>

#include "cpu_backend.hpp"
#include "kernels.hpp"
#include "row_streams.hpp"

namespace gptoss::cpu {
namespace {

// Rows r0 + r * step (r < 4, or r = 0 for the one-row kernel) into y[r * step].
using GemvFn = void (*)(const Weight&, size_t r0, size_t step, const float* x, float* y);
// Two tokens at once: rows r0 + r * step for x and x + ldx into y[r * step] and y[ldy + r * step],
// stepping `ahead` (may be null) once per iteration.
using Gemv2Fn = void (*)(const Weight&, size_t r0, size_t step, const float* x, size_t ldx,
                         float* y, size_t ldy, L2Ahead* ahead);
using PanelFn = void (*)(const Weight&, size_t r0, size_t n, float* panel);
// y[n * ldy + r] = dot(w + r * ldw, x + n * ldx) over K, for r < rows, n < tokens of the tile.
using TileFn = void (*)(const float* w, size_t ldw, const float* x, size_t ldx, size_t K,
                        float* y, size_t ldy);

constexpr size_t kPanelRows = 16;

// One ISA's kernels. gemv_*[0] handles 4 rows at once, [1] one row; tiles[r - 1][t - 1]
// multiplies r <= 4 weight rows by t <= TileTokens tokens. gemv2_*: the same for two tokens,
// each with exactly the one-token arithmetic (null where a level has none).
template <size_t TileTokens>
struct MatmulKernels {
  GemvFn gemv_mxfp4[2], gemv_bf16[2], gemv_f16[2], gemv_q8_0[2], gemv_f32[2];
  PanelFn decode_panel;  // rows to fp32 in kernel order (not used for f32 weights)
  TileFn tiles[4][TileTokens];
  Gemv2Fn gemv2_bf16[2], gemv2_f16[2], gemv2_q8_0[2];
};

// n_tok == 1: 4 rows far apart share every load of x (row_streams.hpp).
template <size_t T>
void gemv_rows(const MatmulKernels<T>& k, const Weight& w, size_t r0, size_t n_rows,
               const float* x, float* y) {
  const GemvFn* f = w.dtype == gptoss_dtype_mxfp4  ? k.gemv_mxfp4
                    : w.dtype == gptoss_dtype_bf16 ? k.gemv_bf16
                    : w.dtype == gptoss_dtype_f16  ? k.gemv_f16
                    : w.dtype == gptoss_dtype_q8_0 ? k.gemv_q8_0
                                                   : k.gemv_f32;
  for_each_row_quad(
      n_rows, [&](size_t i, size_t step) { f[0](w, r0 + i, step, x, y + i); },
      [&](size_t i) { f[1](w, r0 + i, 1, x, y + i); });
}

// n_tok > 1: 16 rows decoded once into an fp32 panel, then register tiles over it.
template <size_t T>
void gemm_panels(const MatmulKernels<T>& k, const Weight& w, size_t r0, size_t n_rows,
                 const float* x, size_t ldx, size_t n_tok, float* y, size_t ldy) {
  const size_t K = w.cols;
  float* panel = w.dtype == gptoss_dtype_f32 ? nullptr : thread_scratch(kPanelRows * K, 3);
  for (size_t p = 0; p < n_rows; p += kPanelRows) {
    const size_t pr = n_rows - p < kPanelRows ? n_rows - p : kPanelRows;
    const float* pw;
    if (panel == nullptr) {
      pw = reinterpret_cast<const float*>(w.data + (r0 + p) * w.row_bytes);
    } else {
      k.decode_panel(w, r0 + p, pr, panel);
      pw = panel;
    }
    for (size_t t = 0; t < n_tok; t += T) {
      const size_t tn = n_tok - t < T ? n_tok - t : T;
      for (size_t q = 0; q < pr; q += 4) {
        const size_t tr = pr - q < 4 ? pr - q : 4;
        k.tiles[tr - 1][tn - 1](pw + q * K, K, x + t * ldx, ldx, K, y + t * ldy + p + q, ldy);
      }
    }
  }
}

template <size_t T>
void matmul_with(const MatmulKernels<T>& k, const Weight& w, size_t r0, size_t n_rows,
                 const float* x, size_t ldx, size_t n_tok, float* y, size_t ldy) {
  if (w.dtype != gptoss_dtype_mxfp4 && w.dtype != gptoss_dtype_bf16 && w.dtype != gptoss_dtype_f16 &&
      w.dtype != gptoss_dtype_q8_0 && w.dtype != gptoss_dtype_f32)
    return matmul_fallback(w, r0, n_rows, x, ldx, n_tok, y, ldy);
  if (n_tok == 1) return gemv_rows(k, w, r0, n_rows, x, y);
  // The level's two-token GEMV for w's dtype (bf16, f16, Q8_0), or null.
  const Gemv2Fn* pairs = w.dtype == gptoss_dtype_bf16   ? k.gemv2_bf16
                         : w.dtype == gptoss_dtype_f16  ? k.gemv2_f16
                         : w.dtype == gptoss_dtype_q8_0 ? k.gemv2_q8_0
                                                        : nullptr;
  if (pairs != nullptr && pairs[0] == nullptr) pairs = nullptr;
  // Two tokens (two sequences decoding together): each row is read once for both; the GEMV is
  // memory-bound, so the second token's multiply-adds come almost free.
  if (pairs != nullptr && n_tok == 2)
    return for_each_row_quad(
        n_rows, [&](size_t i, size_t step) { pairs[0](w, r0 + i, step, x, ldx, y + i, ldy, nullptr); },
        [&](size_t i) { pairs[1](w, r0 + i, 1, x, ldx, y + i, ldy, nullptr); });
  // 3 to kGemvStepTokens tokens: the same kernel on pairs of tokens (an odd last one alone)
  // over L2-sized blocks of rows, each token still with its one-token result. The pairs after
  // a block's first bring the next rows into L2 (L2Ahead).
  if (pairs != nullptr && n_tok <= kGemvStepTokens) {
    const size_t later_pairs = n_tok / 2 - 1;
    L2Ahead ahead;
    return for_each_token_block(n_rows, w.row_bytes, (n_tok + 1) / 2, [&](size_t b, size_t n, size_t p) {
      const float* xp = x + 2 * p * ldx;
      float* yp = y + 2 * p * ldy + b;
      if (2 * p + 1 == n_tok) return gemv_rows(k, w, r0 + b, n, xp, yp);
      if (p == 0 && later_pairs > 0) {
        // The rows after the block: the call's next block, or after its last one the rows
        // that follow (ops hand each thread consecutive pieces: for_each_piece).
        const size_t steps = later_pairs * (n / 4 + n % 4) * ((w.cols + 31) / 32);
        ahead = L2Ahead::over(w.data, w.row_bytes, r0 + b + n, n, w.rows, steps);
      }
      L2Ahead* a = p == 0 ? nullptr : &ahead;
      for_each_row_quad(
          n, [&](size_t i, size_t step) { pairs[0](w, r0 + b + i, step, xp, ldx, yp + i, ldy, a); },
          [&](size_t i) { pairs[1](w, r0 + b + i, 1, xp, ldx, yp + i, ldy, a); });
    });
  }
  if (n_tok <= kGemvTokens)
    return for_each_token_block(n_rows, w.row_bytes + (w.dtype == gptoss_dtype_mxfp4 ? w.cols / 32 : 0), n_tok,
                                [&](size_t b, size_t n, size_t t) {
                                  gemv_rows(k, w, r0 + b, n, x + t * ldx, y + t * ldy + b);
                                });
  gemm_panels(k, w, r0, n_rows, x, ldx, n_tok, y, ldy);
}

}  // namespace
}  // namespace gptoss::cpu
