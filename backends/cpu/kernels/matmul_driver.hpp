#pragma once
// The ISA-independent half of the SIMD fp32 matmuls: which row kernel serves which dtype, and
// the paths (GEMV, row blocks, pairs, panels) over them. Each level's matmul.cpp fills a
// MatmulKernels with its own intrinsics and lists its paths with fp32_paths(). Everything here is
// in an anonymous namespace, so each ISA's translation unit (built with its own -m flags) gets its
// own copy and no code compiled for one ISA can be linked into another's.
#include <cstddef>

#include "cpu_backend.hpp"
#include "kernels.hpp"
#include "row_streams.hpp"

namespace gptoss::cpu {
namespace {

// Rows r0 + r * step (r < 4, or r = 0 for the one-row kernel) into y[r * step].
using GemvFn = void (*)(const Weight&, size_t r0, size_t step, const float* x, float* y);
// Several tokens at once (two, or four): rows r0 + r * step for x + t * ldx into
// y[t * ldy + r * step], stepping `ahead` (may be null) once per iteration.
using Gemv2Fn = void (*)(const Weight&, size_t r0, size_t step, const float* x, size_t ldx,
                         float* y, size_t ldy, L2Ahead* ahead);
using PanelFn = void (*)(const Weight&, size_t r0, size_t n, float* panel);
// y[n * ldy + r] = dot(w + r * ldw, x + n * ldx) over K, for r < rows, n < tokens of the tile,
// taken over k in [k0, k1) per call: the accumulators start at zero (k0 == 0) or from `state`
// (at most 16 vectors), and go back to `state` unless k1 == K, when they are summed into y.
// Chunk bounds are multiples of kTileChunk, so the sums do not depend on the chunking.
using TileFn = void (*)(const float* w, size_t ldw, const float* x, size_t ldx, size_t k0,
                        size_t k1, size_t K, float* state, float* y, size_t ldy);

constexpr size_t kPanelRows = 16;
// k per pass of the tiles over a panel: the panel's chunk (16 rows, 32 KiB) and a token tile's
// stay in L1 while every token tile passes over them (a whole-K tile reads both from L2).
constexpr size_t kTileChunk = 512;
constexpr size_t kTileStateFloats = 16 * 16;  // a tile's accumulators, at most

// The row kernels of one weight format at a level: gemv[0] handles 4 rows at once, [1] one row;
// gemv2: the same for two tokens, gemv4 for four, each token with exactly the one-token
// arithmetic (null where the level has none; gemv4 needs gemv2). Four tokens halve the passes
// over a block of rows and the widening of its weights (AVX-512 has the registers for 4 rows x
// 4 tokens; 8 tokens of Q8_0 and bf16 projections ran 16-30 % faster so).
struct FormatKernels {
  gptoss_dtype dtype;
  GemvFn gemv[2];
  Gemv2Fn gemv2[2];
  Gemv2Fn gemv4[2];
};
constexpr size_t kMaxFormats = 8;

// One ISA's kernels: a row per weight format it specialises (the others take the scalar
// kernel, matmul_fallback), and tiles[r - 1][t - 1] multiplying r <= 4 weight rows by
// t <= TileTokens tokens of a panel. A new format with SIMD kernels at a level is a row here
// and its case in the level's decode_panel.
template <size_t TileTokens>
struct MatmulKernels {
  FormatKernels formats[kMaxFormats];  // up to the first with no gemv
  PanelFn decode_panel;                // rows to fp32 in kernel order (not used for f32 weights)
  TileFn tiles[4][TileTokens];
};

// The row of the dtype, or null.
template <size_t T>
const FormatKernels* format_of(const MatmulKernels<T>& k, gptoss_dtype dtype) {
  for (const FormatKernels& f : k.formats) {
    if (f.gemv[0] == nullptr) break;
    if (f.dtype == dtype) return &f;
  }
  return nullptr;
}

// n_tok == 1: 4 rows far apart share every load of x (row_streams.hpp). w's format has a row.
template <size_t T>
void gemv_rows(const MatmulKernels<T>& k, const Weight& w, size_t r0, size_t n_rows, const float* x,
               float* y) {
  const GemvFn* f = format_of(k, w.dtype)->gemv;
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
  float* state = K > kTileChunk
                     ? thread_scratch((n_tok + T - 1) / T * (kPanelRows / 4) * kTileStateFloats, 1)
                     : nullptr;
  for (size_t p = 0; p < n_rows; p += kPanelRows) {
    const size_t pr = n_rows - p < kPanelRows ? n_rows - p : kPanelRows;
    const float* pw;
    if (panel == nullptr) {
      pw = reinterpret_cast<const float*>(w.data + (r0 + p) * w.row_bytes);
    } else {
      k.decode_panel(w, r0 + p, pr, panel);
      pw = panel;
    }
    for (size_t k0 = 0; k0 < K; k0 += kTileChunk) {
      const size_t k1 = K - k0 < kTileChunk ? K : k0 + kTileChunk;
      for (size_t t = 0; t < n_tok; t += T) {
        const size_t tn = n_tok - t < T ? n_tok - t : T;
        for (size_t q = 0; q < pr; q += 4) {
          const size_t tr = pr - q < 4 ? pr - q : 4;
          float* st = state + ((t / T) * (kPanelRows / 4) + q / 4) * kTileStateFloats;
          k.tiles[tr - 1][tn - 1](pw + q * K, K, x + t * ldx, ldx, k0, k1, K, st,
                                  y + t * ldy + p + q, ldy);
        }
      }
    }
  }
}

// The paths (Fp32Paths, kernels.hpp), each for any token count; the chooser (choose.cpp) says
// which serves which call. Every path gives a (row, token) the same arithmetic as the one-token
// GEMV: the GEMV kernels and the panels' tiles share their accumulation (tested), so a token's
// result does not depend on the path. Dtypes a level does not specialise take the scalar
// kernel (matmul_fallback).
template <size_t T>
bool specialised(const MatmulKernels<T>& k, const Weight& w) {
  return format_of(k, w.dtype) != nullptr;
}

// The level's two-token GEMV for the dtype, or null.
template <size_t T>
const Gemv2Fn* pairs_for(const MatmulKernels<T>& k, gptoss_dtype dtype) {
  const FormatKernels* f = format_of(k, dtype);
  return f != nullptr && f->gemv2[0] != nullptr ? f->gemv2 : nullptr;
}

// GEMV: each token in turn, 4 rows far apart sharing every load of x (row_streams.hpp).
template <const auto& K>
void path_gemv(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx, size_t n_tok,
               float* y, size_t ldy) {
  if (!specialised(K, w)) return matmul_fallback(w, r0, n_rows, x, ldx, n_tok, y, ldy);
  for (size_t t = 0; t < n_tok; ++t) gemv_rows(K, w, r0, n_rows, x + t * ldx, y + t * ldy);
}

// Row blocks: the one-token GEMV per token over blocks of rows that stay in L2 after the first
// token reads them (row_streams.hpp).
template <const auto& K>
void path_row_blocks(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx,
                     size_t n_tok, float* y, size_t ldy) {
  if (!specialised(K, w)) return matmul_fallback(w, r0, n_rows, x, ldx, n_tok, y, ldy);
  for_each_token_block(n_rows, w.row_bytes + (w.dtype == gptoss_dtype_mxfp4 ? w.cols / 32 : 0),
                       n_tok, [&](size_t b, size_t n, size_t t) {
                         gemv_rows(K, w, r0 + b, n, x + t * ldx, y + t * ldy + b);
                       });
}

// Whether the level has the two-token GEMV for this dtype (path_pairs needs it).
template <const auto& K>
bool path_has_pairs(gptoss_dtype dtype) {
  return pairs_for(K, dtype) != nullptr;
}

// Pairs: two tokens share each row read (the GEMV is memory-bound, so the second token's
// multiply-adds come almost free), or four where the level has gemv4 for the format; more
// tokens go in such groups (the last group's 2-3 tokens as a pair and one alone) over L2-sized
// blocks of rows, the groups after a block's first bringing the next rows into L2 (L2Ahead).
template <const auto& K>
void path_pairs(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx, size_t n_tok,
                float* y, size_t ldy) {
  const Gemv2Fn* pairs = pairs_for(K, w.dtype);
  if (pairs == nullptr) return path_row_blocks<K>(w, r0, n_rows, x, ldx, n_tok, y, ldy);
  if (n_tok == 1) return gemv_rows(K, w, r0, n_rows, x, y);
  const FormatKernels* format = format_of(K, w.dtype);
  const Gemv2Fn* quads = format->gemv4[0] != nullptr ? format->gemv4 : nullptr;
  // Tokens [t, t + n) (n <= the group size) for rows [b, b + n_b) of the call.
  auto group = [&](size_t b, size_t n_b, size_t t, size_t n, L2Ahead* a) {
    const float* xt = x + t * ldx;
    float* yt = y + t * ldy + b;
    if (n == 1) return gemv_rows(K, w, r0 + b, n_b, xt, yt);
    const Gemv2Fn* f = n == 4 && quads != nullptr ? quads : pairs;
    for_each_row_quad(
        n_b, [&](size_t i, size_t step) { f[0](w, r0 + b + i, step, xt, ldx, yt + i, ldy, a); },
        [&](size_t i) { f[1](w, r0 + b + i, 1, xt, ldx, yt + i, ldy, a); });
    if (n == 3) gemv_rows(K, w, r0 + b, n_b, xt + 2 * ldx, yt + 2 * ldy);
  };
  const size_t size = quads != nullptr ? 4 : 2;
  if (n_tok == 2 || n_tok == size) return group(0, n_rows, 0, n_tok, nullptr);
  // The groups after the first that step `ahead` (a last token alone does not).
  const size_t groups = (n_tok + size - 1) / size;
  const size_t later_groups = n_tok / size + (n_tok % size >= 2 ? 1 : 0) - 1;
  L2Ahead ahead;
  for_each_token_block(n_rows, w.row_bytes, groups, [&](size_t b, size_t n, size_t g) {
    if (g == 0 && later_groups > 0) {
      // The rows after the block: the call's next block, or after its last one the rows
      // that follow (ops hand each thread consecutive pieces: for_each_piece).
      const size_t steps = later_groups * (n / 4 + n % 4) * ((w.cols + 31) / 32);
      ahead = L2Ahead::over(w.data, w.row_bytes, r0 + b + n, n, w.rows, steps);
    }
    const size_t t = g * size;
    group(b, n, t, n_tok - t < size ? n_tok - t : size, g == 0 ? nullptr : &ahead);
  });
}

// Panels: 16 rows decoded once into an fp32 panel, then register tiles over it.
template <const auto& K>
void path_panels(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx,
                 size_t n_tok, float* y, size_t ldy) {
  if (!specialised(K, w)) return matmul_fallback(w, r0, n_rows, x, ldx, n_tok, y, ldy);
  gemm_panels(K, w, r0, n_rows, x, ldx, n_tok, y, ldy);
}

// A level's paths, from its MatmulKernels (a constant of its matmul.cpp).
template <const auto& K>
constexpr Fp32Paths fp32_paths() {
  return {path_gemv<K>, path_row_blocks<K>, path_has_pairs<K>, path_pairs<K>, path_panels<K>};
}

// Kernels::matmul: the path the chooser takes for n_tok tokens of one call (decode-sized pairs
// and row blocks, panels beyond), for the tests and callers outside the ops.
template <const auto& K>
void matmul_with(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx,
                 size_t n_tok, float* y, size_t ldy) {
  if (n_tok == 1) return path_gemv<K>(w, r0, n_rows, x, ldx, n_tok, y, ldy);
  if (n_tok <= kGemvStepTokens && path_has_pairs<K>(w.dtype))
    return path_pairs<K>(w, r0, n_rows, x, ldx, n_tok, y, ldy);
  if (n_tok <= kGemvTokens) return path_row_blocks<K>(w, r0, n_rows, x, ldx, n_tok, y, ldy);
  path_panels<K>(w, r0, n_rows, x, ldx, n_tok, y, ldy);
}

}  // namespace
}  // namespace gptoss::cpu
