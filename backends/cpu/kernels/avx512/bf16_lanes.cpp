// bf16 weights repacked at upload into tiles of 16 rows (Weight::bf16_lanes): per tile and pair
// of columns k, k + 1, 16 32-bit lanes, lane r holding row r's weight k in its low half and k + 1
// in its high half. A 64-byte load holds two k of 16 rows; a shift widens the first to fp32, a
// mask the second. Each (row, token) is one FMA chain over k in order, the same on every path
// (one token, a decode step's few, a prefill tile), so a token's result does not depend on the
// batch it came in, and the scalar reference (matmul_bf16_lanes_reference) gives the same bits.
//
// Against the fp32 panels of the row layout (matmul.cpp), whose order is the one-token GEMV's
// (16 lanes over k, then a horizontal sum): a tile loads a weight vector per tile of rows and
// broadcasts each token's activation, with no panel to decode, and a decode token reads one
// stream per 16 rows (docs/performance.md, "The attention projections in lanes").
#include <immintrin.h>

#include "avx512/avx512.hpp"
#include "cpu_backend.hpp"
#include "row_streams.hpp"

namespace gptoss::cpu {
namespace {

constexpr size_t kLaneRows = 16;
// Each stream prefetched this far ahead (bytes), once per 64-byte line.
constexpr size_t kLanesPrefetchBytes = 1024;

// RB tiles of rows x T tokens: 2 k a step, a 64-byte load per tile (16 rows' pairs), the even
// k by a shift, the odd by a mask.
template <int RB, int T>
void lanes_tile(const uint16_t* w, size_t tile_elems, size_t K, const float* x, size_t ldx,
                float* y, size_t ldy, L2Ahead* ahead) {
  const uint16_t* p[RB];
  __m512 acc[RB][T];
  for (int b = 0; b < RB; ++b) {
    p[b] = w + size_t(b) * tile_elems;
    for (int t = 0; t < T; ++t) acc[b][t] = _mm512_setzero_ps();
  }
  const __m512i high = _mm512_set1_epi32(int(0xffff0000u));
  for (size_t k = 0; k < K; k += 2) {
    if (ahead != nullptr) ahead->step();
    __m512 we[RB], wo[RB];
    for (int b = 0; b < RB; ++b) {
      // Into L2, as the row GEMVs' one-token prefetches (matmul.cpp): the demand loads keep
      // the L1 miss buffers.
      const char* line = reinterpret_cast<const char*>(p[b] + kLaneRows * k);
      _mm_prefetch(line + kLanesPrefetchBytes, _MM_HINT_T1);
      const __m512i v = _mm512_loadu_si512(line);
      we[b] = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
      wo[b] = _mm512_castsi512_ps(_mm512_and_si512(v, high));
    }
    for (int t = 0; t < T; ++t) {
      const __m512 xe = _mm512_set1_ps(x[size_t(t) * ldx + k]);
      const __m512 xo = _mm512_set1_ps(x[size_t(t) * ldx + k + 1]);
      for (int b = 0; b < RB; ++b)
        acc[b][t] = _mm512_fmadd_ps(wo[b], xo, _mm512_fmadd_ps(we[b], xe, acc[b][t]));
    }
  }
  for (int b = 0; b < RB; ++b)
    for (int t = 0; t < T; ++t)
      _mm512_storeu_ps(y + size_t(t) * ldy + kLaneRows * size_t(b), acc[b][t]);
}

using LanesTileFn = void (*)(const uint16_t*, size_t, size_t, const float*, size_t, float*, size_t,
                             L2Ahead*);
constexpr size_t kTileBlocks = 4, kTileTokens = 5;
// 4 tiles of rows x 5 tokens: 20 accumulators, 8 weight vectors and 2 broadcasts in the 32 zmm.
// clang-format off
const LanesTileFn kLanesTiles[kTileBlocks][kTileTokens] = {
    {lanes_tile<1, 1>, lanes_tile<1, 2>, lanes_tile<1, 3>, lanes_tile<1, 4>, lanes_tile<1, 5>},
    {lanes_tile<2, 1>, lanes_tile<2, 2>, lanes_tile<2, 3>, lanes_tile<2, 4>, lanes_tile<2, 5>},
    {lanes_tile<3, 1>, lanes_tile<3, 2>, lanes_tile<3, 3>, lanes_tile<3, 4>, lanes_tile<3, 5>},
    {lanes_tile<4, 1>, lanes_tile<4, 2>, lanes_tile<4, 3>, lanes_tile<4, 4>, lanes_tile<4, 5>},
};
// clang-format on

}  // namespace

namespace avx512 {
void matmul_bf16_lanes(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx,
                       size_t n_tok, float* y, size_t ldy) {
  const size_t K = w.cols, tile_elems = kLaneRows * K;
  const uint16_t* base = reinterpret_cast<const uint16_t*>(w.data) + (r0 / kLaneRows) * tile_elems;
  const size_t n_blocks = n_rows / kLaneRows;
  // Tokens per pass over the rows: up to 5 in one; 6 to 8 (a decode step) in two even passes;
  // prefill in passes of 5. A pass after the first reads its tiles from L2 and brings the
  // next tiles' rows into L2 meanwhile (as the row layout's pairs do: row_streams.hpp), so
  // the memory keeps streaming. (One pass of 8 tokens over fewer tiles was no faster.)
  const size_t tokens = n_tok <= kTileTokens ? n_tok : n_tok <= 8 ? (n_tok + 1) / 2 : kTileTokens;
  const size_t passes = (n_tok + tokens - 1) / tokens;
  L2Ahead ahead;
  for (size_t b = 0; b < n_blocks; b += kTileBlocks) {
    const size_t rb = n_blocks - b < kTileBlocks ? n_blocks - b : kTileBlocks;
    if (passes > 1)
      ahead = L2Ahead::over(w.data, w.row_bytes, r0 + (b + rb) * kLaneRows, kTileBlocks * kLaneRows,
                            w.rows, (passes - 1) * (K / 2));
    for (size_t t = 0; t < n_tok; t += tokens) {
      const size_t tn = n_tok - t < tokens ? n_tok - t : tokens;
      kLanesTiles[rb - 1][tn - 1](base + b * tile_elems, tile_elems, K, x + t * ldx, ldx,
                                  y + t * ldy + b * kLaneRows, ldy, t == 0 ? nullptr : &ahead);
    }
  }
}

// Per tile and 32 columns: the 16 rows' 64-byte loads hold 16 column pairs each (a 32-bit
// element per pair), and the tile's 16 output vectors are those pairs' columns, so the repack
// is a 16 x 16 transpose of 32-bit elements (unpacks within 128-bit lanes, then across them).
// Columns past the last multiple of 32 take the scalar loop.
void repack_bf16_lanes(const uint16_t* src, size_t cols, size_t i0, size_t i1, uint16_t* dst) {
  const size_t wide = cols - cols % 32;
  for (size_t i = i0; i < i1; ++i) {
    const uint16_t* s = src + kLaneRows * i * cols;
    uint16_t* d = dst + kLaneRows * i * cols;
    for (size_t k0 = 0; k0 < wide; k0 += 32) {
      __m512i r[16], t[16], u[16];
      for (int j = 0; j < 16; ++j) r[j] = _mm512_loadu_si512(s + size_t(j) * cols + k0);
      for (int j = 0; j < 16; j += 2) {
        t[j] = _mm512_unpacklo_epi32(r[j], r[j + 1]);
        t[j + 1] = _mm512_unpackhi_epi32(r[j], r[j + 1]);
      }
      // u[4g + c]: rows 4g..4g+3 of column pair 4L + c in each 128-bit lane L.
      for (int g = 0; g < 4; ++g) {
        u[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
        u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
      }
      uint16_t* out = d + 16 * k0;  // pair k0 / 2 + p at out + 32 p
      for (int c = 0; c < 4; ++c) {
        const __m512i w0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44);
        const __m512i w1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xEE);
        const __m512i w2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44);
        const __m512i w3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xEE);
        _mm512_storeu_si512(out + 32 * (c + 0), _mm512_shuffle_i32x4(w0, w2, 0x88));
        _mm512_storeu_si512(out + 32 * (c + 4), _mm512_shuffle_i32x4(w0, w2, 0xDD));
        _mm512_storeu_si512(out + 32 * (c + 8), _mm512_shuffle_i32x4(w1, w3, 0x88));
        _mm512_storeu_si512(out + 32 * (c + 12), _mm512_shuffle_i32x4(w1, w3, 0xDD));
      }
    }
    for (size_t r = 0; r < kLaneRows; ++r)
      for (size_t k = wide; k < cols; ++k) d[32 * (k / 2) + 2 * r + k % 2] = s[r * cols + k];
  }
}
}  // namespace avx512

}  // namespace gptoss::cpu
