// The fast mode's int16 path of the avx512vnni level (also in the avx512bf16 table): Q8_0
// weights times int16 activations (Q16Acts, kernels.hpp), for the attention projections of a
// GGUF with Q8_0 dense tensors, where int8 activations cost too much precision. vpmovsxbw
// widens a block's 32 weights to int16 and vpdpwssd multiplies them with the block's 32
// activations: 32 multiply-adds an instruction, twice an fp32 FMA, and no conversion of weights
// to fp32. Built with -mavx512vnni on top of the AVX-512 flags. The scalar definitions are
// quantize_q16_reference and matmul_q8_0_q16_reference (scalar/matmul.cpp).
//
// The order of a row's sum, which both layouts below give: per block b the exact int32 sum
// S_b = sum(w q) and its scale c_b = e_b * d_b (e_b the block's f16 step, d_b the activations'
// step); 16 chains, chain m taking fma(float(S_b), c_b, .) for the blocks b = m (mod 16) in
// increasing order; then the chains added as _mm512_reduce_add_ps adds its lanes, chain m in
// lane m. A row's result depends on nothing but the row and the token's activations. The avx2
// level's kernel over the repacked layout (avx2/int16.cpp) sums in the same order.
//
//   n_tok == 1 (decode, memory-bound): "row" layout. Per block one vpdpwssd gives 16 partial
//   sums; the vectors of 16 blocks are folded by integer unpacks, shuffles and adds into one
//   vector of the 16 block sums, block i in lane i. 4 rows a quarter of the range apart
//   (row_streams.hpp).
//
//   n_tok > 1 (prefill, a step's tokens): "lane" layout. A panel of 16 rows is widened once to
//   int16 with one row per 32-bit lane: for block b, pair p (elements 2p and 2p + 1) is one
//   zmm holding that pair of each of the 16 rows (a 16x16 transpose of dwords). A token then
//   takes 16 vpdpwssd with its pairs broadcast, a whole block per row in int32, and one convert
//   and scale per block, walking the chains one after another.
//
//   A weight repacked at upload (Weight::q8_0_lanes) is already in that layout, in int8: the
//   tiles read it in place, widening each pair vector as they load it, with no panel to decode
//   (at 8 tokens the decode took 40 % of the panels' time). One token walks the same 16 chains
//   with the blocks in memory order, so that the tile streams in front to back.
#include <immintrin.h>

#include "avx512vnni/avx512vnni.hpp"
#include "cpu_backend.hpp"
#include "formats.hpp"
#include "kernels.hpp"
#include "row_streams.hpp"

namespace gptoss::cpu {
namespace {

constexpr size_t kBlockBytes = kQ8_0BlockBytes;
constexpr size_t kChains = 16;
constexpr size_t kPanelRows = 16;
constexpr size_t kLanesBlockBytes = kQ8_0LanesBlockBytes;
// How far ahead of its block the one-token GEMV over Weight::q8_0_lanes tiles (one stream
// per thread) prefetches, into L1: one stream reads fastest so (8 KiB into L1 beat 2 KiB into
// L2 by 25-35 % from memory, and 4 or 16 KiB; docs/performance.md).
constexpr size_t kLanesAheadBytes = 8192;
// As in the int8 kernels (int8.cpp): the decode GEMV prefetches its rows this far ahead into
// L2, and the panels the rows of the next pair of panels.
constexpr size_t kFarRowsPrefetchBytes = 1024;
constexpr size_t kPrefetchRows = 2 * kPanelRows;

inline __mmask16 mask16(size_t n) {
  return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1u);
}

// Block i's 32 weights of a row widened to int16 (zero past the row: blocks >= nb).
inline __m512i widen_block(const uint8_t* row, size_t b, size_t nb) {
  if (b >= nb) return _mm512_setzero_si512();
  return _mm512_cvtepi8_epi16(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + kBlockBytes * b + 2)));
}

// Two vectors' lane sums folded: per 128-bit lane, [a0 + a2, b0 + b2, a1 + a3, b1 + b3].
inline __m512i fold32(__m512i a, __m512i b) {
  return _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
}
// Two fold32 results (of blocks 4k, 4k + 1 and 4k + 2, 4k + 3) folded again: per 128-bit lane,
// that lane's partial sum of each of the 4 blocks, in order.
inline __m512i fold64(__m512i c, __m512i d) {
  return _mm512_add_epi32(_mm512_unpacklo_epi64(c, d), _mm512_unpackhi_epi64(c, d));
}
// The 128-bit lanes added pairwise: [a0 + a1, a2 + a3, b0 + b1, b2 + b3].
inline __m512i fold128(__m512i a, __m512i b) {
  return _mm512_add_epi32(_mm512_shuffle_i32x4(a, b, 0x88), _mm512_shuffle_i32x4(a, b, 0xdd));
}

// The exact int32 sums of blocks b0 .. b0 + 15 of a row times one token's activations xq
// (natural order), block i in lane i.
__attribute__((always_inline)) inline __m512i chunk_sums(const uint8_t* row, size_t b0, size_t nb,
                                                         const int16_t* xq) {
  __m512i v[4];
  for (size_t k = 0; k < 4; ++k) {
    __m512i p[4];
    for (size_t i = 0; i < 4; ++i) {
      const size_t b = b0 + 4 * k + i;
      p[i] = _mm512_dpwssd_epi32(_mm512_setzero_si512(), widen_block(row, b, nb),
                                 _mm512_loadu_si512(xq + 32 * b));
    }
    v[k] = fold64(fold32(p[0], p[1]), fold32(p[2], p[3]));
  }
  // fold128 of (v0, v1) holds blocks 0-3 and 4-7 as lane halves; the second fold128 adds them.
  return fold128(fold128(v[0], v[1]), fold128(v[2], v[3]));
}

// The f16 steps of blocks b0 .. b0 + 15 of a row (zero past the row), as floats in lanes 0..15:
// the low half of the dword at each block's start.
inline __m512 chunk_steps(const uint8_t* row, size_t b0, size_t nb) {
  const __m512i at =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(int(kBlockBytes)));
  const __m512i d = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), mask16(nb - b0), at,
                                                row + kBlockBytes * b0, 1);
  return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d));
}

// Rows r0 + r * step (r < R) for one token into y[r * step].
template <int R>
void gemv_rows(const Weight& w, size_t r0, size_t step, const int16_t* xq, const float* xd,
               float* y) {
  const size_t nb = w.cols / 32;
  const uint8_t* row[R];
  __m512 acc[R];
  for (int r = 0; r < R; ++r) {
    row[r] = w.data + (r0 + size_t(r) * step) * w.row_bytes;
    acc[r] = _mm512_setzero_ps();
  }
  for (size_t b0 = 0; b0 < nb; b0 += 16) {
    const __m512 d = _mm512_loadu_ps(xd + b0);  // padding blocks have d = 0
    for (int r = 0; r < R; ++r) {
      for (size_t off = 0; off < 16 * kBlockBytes; off += 64)
        _mm_prefetch(
            reinterpret_cast<const char*>(row[r] + kBlockBytes * b0 + off) + kFarRowsPrefetchBytes,
            _MM_HINT_T1);
      const __m512 c = _mm512_mul_ps(chunk_steps(row[r], b0, nb), d);
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(chunk_sums(row[r], b0, nb, xq)), c, acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) y[size_t(r) * step] = _mm512_reduce_add_ps(acc[r]);
}

// Rows [r0, r0 + n_rows) for token t of x.
void gemv_token(const Weight& w, size_t r0, size_t n_rows, const Q16Acts& x, size_t t, float* y) {
  const int16_t* xq = x.q + t * x.q_stride;
  const float* xd = x.d + t * x.b_stride;
  for_each_row_quad(
      n_rows, [&](size_t i, size_t step) { gemv_rows<4>(w, r0 + i, step, xq, xd, y + i); },
      [&](size_t i) { gemv_rows<1>(w, r0 + i, 1, xq, xd, y + i); });
}

// --- several tokens: lane layout --------------------------------------------------------

// A panel holds a row's blocks in chain order, block b at slot (b % 16) * chain_len + b / 16,
// each slot 16 zmm of weight pairs then one zmm of row steps.
constexpr size_t kSlotZmm = 17;
inline size_t chain_len(size_t nb) { return (nb + kChains - 1) / kChains; }
inline size_t panel_slot(size_t b, size_t nb) {
  return (b % kChains) * chain_len(nb) + b / kChains;
}

// r[i] (row i's 16 dwords) -> out[p]: dword p of each row, row i in lane i.
inline void transpose16(const __m512i (&r)[16], __m512i* out) {
  __m512i a[16], b[16];
  for (int i = 0; i < 8; ++i) {
    a[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  // b[4i + k], 128-bit lane q: dword 4q + k of rows 4i .. 4i + 3.
  for (int i = 0; i < 4; ++i) {
    b[4 * i + 0] = _mm512_unpacklo_epi64(a[4 * i + 0], a[4 * i + 2]);
    b[4 * i + 1] = _mm512_unpackhi_epi64(a[4 * i + 0], a[4 * i + 2]);
    b[4 * i + 2] = _mm512_unpacklo_epi64(a[4 * i + 1], a[4 * i + 3]);
    b[4 * i + 3] = _mm512_unpackhi_epi64(a[4 * i + 1], a[4 * i + 3]);
  }
  // out[4q + k], 128-bit lane i = b[4i + k], lane q: a 4x4 transpose of 128-bit lanes.
  for (int k = 0; k < 4; ++k) {
    const __m512i c0 = _mm512_shuffle_i32x4(b[k], b[4 + k], 0x44);
    const __m512i c1 = _mm512_shuffle_i32x4(b[k], b[4 + k], 0xee);
    const __m512i c2 = _mm512_shuffle_i32x4(b[8 + k], b[12 + k], 0x44);
    const __m512i c3 = _mm512_shuffle_i32x4(b[8 + k], b[12 + k], 0xee);
    _mm512_store_si512(out + 0 + k, _mm512_shuffle_i32x4(c0, c2, 0x88));
    _mm512_store_si512(out + 4 + k, _mm512_shuffle_i32x4(c0, c2, 0xdd));
    _mm512_store_si512(out + 8 + k, _mm512_shuffle_i32x4(c1, c3, 0x88));
    _mm512_store_si512(out + 12 + k, _mm512_shuffle_i32x4(c1, c3, 0xdd));
  }
}

// Rows [r0, r0 + n) (n <= 16; missing rows are zero) of w into panel.
void decode_panel(const Weight& w, size_t r0, size_t n, __m512i* panel) {
  const size_t nb = w.cols / 32;
  alignas(64) static const uint8_t zeros[kBlockBytes] = {};
  const uint8_t* row[kPanelRows];
  size_t step[kPanelRows];  // bytes per block, 0 for a missing row (reads zeros forever)
  for (size_t i = 0; i < kPanelRows; ++i) {
    row[i] = i < n ? w.data + (r0 + i) * w.row_bytes : zeros;
    step[i] = i < n ? kBlockBytes : 0;
  }
  const __mmask16 valid = mask16(n);
  const size_t ahead = kPrefetchRows * w.row_bytes;
  const __m512i offs =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(int(w.row_bytes)));
  for (size_t b = 0; b < nb; ++b) {
    // A prefetch per row and block (34 bytes apart: every line of the rows below is asked for).
    for (size_t i = 0; i < n; ++i)
      _mm_prefetch(reinterpret_cast<const char*>(row[i] + kBlockBytes * b) + ahead, _MM_HINT_T0);
    __m512i r[16];
    for (size_t i = 0; i < kPanelRows; ++i)
      r[i] = _mm512_cvtepi8_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row[i] + step[i] * b + 2)));
    __m512i* out = panel + kSlotZmm * panel_slot(b, nb);
    transpose16(r, out);
    const __m512i d = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid, offs,
                                                  w.data + r0 * w.row_bytes + kBlockBytes * b, 1);
    out[16] = _mm512_castps_si512(_mm512_cvtph_ps(_mm512_cvtepi32_epi16(d)));
  }
}

// Where a tile reads a block's 16 pair vectors and 16 row steps. A source S gives
// S::pairs(panel, b, nb, i) (pair vector i of block b, widened) and S::steps(panel, b, nb).
//
// A panel decoded into scratch: kSlotZmm zmm per block, at the block's chain-order slot.
struct DecodedPanel {
  using Base = const __m512i*;
  static size_t stride(size_t nb) { return kSlotZmm * kChains * chain_len(nb); }  // zmm
  static __m512i pairs(Base panel, size_t b, size_t nb, size_t i) {
    return _mm512_load_si512(panel + kSlotZmm * panel_slot(b, nb) + i);
  }
  static __m512 steps(Base panel, size_t b, size_t nb) {
    return _mm512_castsi512_ps(_mm512_load_si512(panel + kSlotZmm * panel_slot(b, nb) + 16));
  }
};
// A tile of a weight repacked at upload (Weight::q8_0_lanes): its blocks in order, 16 pair
// vectors of 32 int8 and then 16 f16 steps each (kLanesBlockBytes).
struct RepackedTile {
  using Base = const uint8_t*;
  static size_t stride(size_t nb) { return kLanesBlockBytes * nb; }  // bytes
  static __m512i pairs(Base tile, size_t b, size_t, size_t i) {
    return _mm512_cvtepi8_epi16(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile + kLanesBlockBytes * b + 32 * i)));
  }
  static __m512 steps(Base tile, size_t b, size_t) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(tile + kLanesBlockBytes * b + kQ8_0LanesStepsAt)));
  }
};

// Bytes a tile call fetches into L2 while it computes: `lines` cache lines from `at`, spread
// over its blocks (none: at == nullptr).
struct Ahead {
  const char* at = nullptr;
  size_t lines = 0;
};

// y[t * ldy + r] for r < n_rows (<= 16 P), t < TN: P consecutive panels (panel_stride apart)
// times TN tokens. A block's 16 pairs go in quarters of 4 (P x 4 weight registers), each
// token's int32 sums carried over the quarters.
template <typename S, int P, int TN>
void panel_tile(typename S::Base panel, size_t panel_stride, size_t nb, const Q16Acts& x, size_t t0,
                size_t n_rows, float* y, size_t ldy, Ahead ahead) {
  const size_t ahead_per_block = (ahead.lines + nb - 1) / nb;
  const char* next = ahead.at;
  const int32_t* xp[TN];  // a token's activations as pairs
  const float* xd[TN];
  for (int n = 0; n < TN; ++n) {
    xp[n] = reinterpret_cast<const int32_t*>(x.q + (t0 + size_t(n)) * x.q_stride);
    xd[n] = x.d + (t0 + size_t(n)) * x.b_stride;
  }
  __m512 part[16][P][TN];
  for (size_t m = 0; m < 16; ++m) {
    __m512 acc[P][TN];
    for (int p = 0; p < P; ++p)
      for (int n = 0; n < TN; ++n) acc[p][n] = _mm512_setzero_ps();
    for (size_t b = m; b < nb; b += 16) {
      if (next != nullptr)
        for (size_t l = 0; l < ahead_per_block; ++l, next += 64) _mm_prefetch(next, _MM_HINT_T1);
      typename S::Base wp[P];
      for (int p = 0; p < P; ++p) wp[p] = panel + size_t(p) * panel_stride;
      __m512i s[P][TN];
      for (int p = 0; p < P; ++p)
        for (int n = 0; n < TN; ++n) s[p][n] = _mm512_setzero_si512();
      for (size_t quarter = 0; quarter < 4; ++quarter) {
        __m512i wv[P][4];
        for (int p = 0; p < P; ++p)
          for (size_t g = 0; g < 4; ++g) wv[p][g] = S::pairs(wp[p], b, nb, 4 * quarter + g);
        for (int n = 0; n < TN; ++n)
          for (size_t g = 0; g < 4; ++g) {
            const __m512i xb = _mm512_set1_epi32(xp[n][16 * b + 4 * quarter + g]);
            for (int p = 0; p < P; ++p) s[p][n] = _mm512_dpwssd_epi32(s[p][n], wv[p][g], xb);
          }
      }
      for (int p = 0; p < P; ++p) {
        const __m512 e = S::steps(wp[p], b, nb);
        for (int n = 0; n < TN; ++n)
          acc[p][n] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[p][n]),
                                      _mm512_mul_ps(e, _mm512_set1_ps(xd[n][b])), acc[p][n]);
      }
    }
    for (int p = 0; p < P; ++p)
      for (int n = 0; n < TN; ++n) part[m][p][n] = acc[p][n];
  }
  // The lanes' tree of _mm512_reduce_add_ps: lane L with L + 8, then + 4, + 2, + 1.
  for (size_t w = 8; w >= 1; w /= 2)
    for (size_t l = 0; l < w; ++l)
      for (int p = 0; p < P; ++p)
        for (int n = 0; n < TN; ++n)
          part[l][p][n] = _mm512_add_ps(part[l][p][n], part[l + w][p][n]);
  for (int p = 0; p < P; ++p) {
    const size_t rows = n_rows > 16 * size_t(p) ? n_rows - 16 * size_t(p) : 0;
    const __mmask16 mask = mask16(rows);
    for (int n = 0; n < TN; ++n)
      _mm512_mask_storeu_ps(y + size_t(n) * ldy + 16 * size_t(p), mask, part[0][p][n]);
  }
}

constexpr size_t kTileTokens1 = 8, kTileTokens2 = 4;  // tokens per tile for 1 and 2 panels

// Tokens [0, n_tok) over the pr (<= 32) rows of one or two panels, in tiles of up to
// kTileTokens1 (one panel) or kTileTokens2 (two) tokens; the first tile call fetches `ahead`.
template <typename S>
void panels_times_tokens(typename S::Base panel, size_t nb, const Q16Acts& x, size_t t0,
                         size_t n_tok, size_t pr, float* y, size_t ldy, Ahead ahead = {}) {
  using TileFn = void (*)(typename S::Base, size_t, size_t, const Q16Acts&, size_t, size_t, float*,
                          size_t, Ahead);
  static constexpr TileFn kTiles1[kTileTokens1] = {
      panel_tile<S, 1, 1>, panel_tile<S, 1, 2>, panel_tile<S, 1, 3>, panel_tile<S, 1, 4>,
      panel_tile<S, 1, 5>, panel_tile<S, 1, 6>, panel_tile<S, 1, 7>, panel_tile<S, 1, 8>};
  static constexpr TileFn kTiles2[kTileTokens2] = {panel_tile<S, 2, 1>, panel_tile<S, 2, 2>,
                                                   panel_tile<S, 2, 3>, panel_tile<S, 2, 4>};
  const bool two = pr > kPanelRows;
  const size_t tile = two ? kTileTokens2 : kTileTokens1;
  for (size_t t = 0; t < n_tok; t += tile) {
    const size_t tn = n_tok - t < tile ? n_tok - t : tile;
    (two ? kTiles2 : kTiles1)[tn - 1](panel, S::stride(nb), nb, x, t0 + t, pr, y + t * ldy, ldy,
                                      t == 0 ? ahead : Ahead{});
  }
}

}  // namespace

void quantize_q16_avx512vnni(const float* x, size_t ldx, size_t n_tok, Q16Acts& out) {
  const size_t nb = out.cols / 32;
  const __m512 sign = _mm512_set1_ps(-0.0f);
  for (size_t t = 0; t < n_tok; ++t) {
    const float* xr = x + t * ldx;
    int16_t* q = out.q + t * out.q_stride;
    float* d = out.d + t * out.b_stride;
    for (size_t b = 0; b < nb; ++b) {
      const __m512 a = _mm512_loadu_ps(xr + 32 * b), c = _mm512_loadu_ps(xr + 32 * b + 16);
      const float amax =
          _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, a), _mm512_andnot_ps(sign, c)));
      const float step = amax / 32767.0f;
      const float inv = step != 0.0f ? 1.0f / step : 0.0f;
      // Round to nearest even (MXCSR default), like nearbyint; |x / step| <= 32767 after it.
      const __m512i qa = _mm512_cvtps_epi32(_mm512_mul_ps(a, _mm512_set1_ps(inv)));
      const __m512i qc = _mm512_cvtps_epi32(_mm512_mul_ps(c, _mm512_set1_ps(inv)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b), _mm512_cvtsepi32_epi16(qa));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b + 16), _mm512_cvtsepi32_epi16(qc));
      d[b] = step;
    }
    for (size_t b = nb; b < out.b_stride; ++b) {
      _mm512_storeu_si512(q + 32 * b, _mm512_setzero_si512());
      d[b] = 0.0f;
    }
  }
}

void matmul_q8_0_q16_avx512vnni(const Weight& w, size_t r0, size_t n_rows, const Q16Acts& x,
                                size_t t0, size_t n_tok, float* y, size_t ldy) {
  if (n_tok == 1) return gemv_token(w, r0, n_rows, x, t0, y);
  const size_t nb = w.cols / 32, stride = DecodedPanel::stride(nb);
  __m512i* panel = reinterpret_cast<__m512i*>(thread_scratch(2 * stride * 16, 2));
  for (size_t p = 0; p < n_rows; p += 2 * kPanelRows) {
    const size_t pr = n_rows - p < 2 * kPanelRows ? n_rows - p : 2 * kPanelRows;
    decode_panel(w, r0 + p, pr < kPanelRows ? pr : kPanelRows, panel);
    if (pr > kPanelRows) decode_panel(w, r0 + p + kPanelRows, pr - kPanelRows, panel + stride);
    panels_times_tokens<DecodedPanel>(panel, nb, x, t0, n_tok, pr, y + p, ldy);
  }
}

namespace {

// One token times the rows of tile (n_rows <= 16) into y: the tiles' chains, blocks taken in
// order (chain m = b % 16 in acc[m]) so that the tile streams in front to back, and each
// block's sum in four int32 partials (exact in any order) for instruction-level parallelism.
void lanes_gemv(const uint8_t* tile, size_t nb, const Q16Acts& x, size_t t, size_t n_rows,
                float* y) {
  const int32_t* xp = reinterpret_cast<const int32_t*>(x.q + t * x.q_stride);
  const float* xd = x.d + t * x.b_stride;
  __m512 acc[16];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (size_t b0 = 0; b0 < nb; b0 += 16) {
#pragma GCC unroll 16
    for (size_t m = 0; m < 16; ++m) {
      const size_t b = b0 + m;
      if (b >= nb) break;
      const uint8_t* blk = tile + kLanesBlockBytes * b;
      for (size_t off = 0; off < kLanesBlockBytes; off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(blk) + off + kLanesAheadBytes, _MM_HINT_T0);
      __m512i s[4];
      for (size_t g = 0; g < 4; ++g)
        s[g] = _mm512_dpwssd_epi32(_mm512_setzero_si512(), RepackedTile::pairs(tile, b, nb, g),
                                   _mm512_set1_epi32(xp[16 * b + g]));
      for (size_t i = 4; i < 16; ++i)
        s[i % 4] = _mm512_dpwssd_epi32(s[i % 4], RepackedTile::pairs(tile, b, nb, i),
                                       _mm512_set1_epi32(xp[16 * b + i]));
      const __m512i sum =
          _mm512_add_epi32(_mm512_add_epi32(s[0], s[1]), _mm512_add_epi32(s[2], s[3]));
      acc[m] = _mm512_fmadd_ps(
          _mm512_cvtepi32_ps(sum),
          _mm512_mul_ps(RepackedTile::steps(tile, b, nb), _mm512_set1_ps(xd[b])), acc[m]);
    }
  }
  for (size_t w = 8; w >= 1; w /= 2)
    for (size_t l = 0; l < w; ++l) acc[l] = _mm512_add_ps(acc[l], acc[l + w]);
  _mm512_mask_storeu_ps(y, mask16(n_rows), acc[0]);
}

}  // namespace

void matmul_q8_0_lanes_q16_avx512vnni(const Weight& w, size_t r0, size_t n_rows, const Q16Acts& x,
                                      size_t t0, size_t n_tok, float* y, size_t ldy) {
  const size_t nb = w.cols / 32, tile_bytes = RepackedTile::stride(nb);
  if (n_tok == 1) {
    for (size_t p = 0; p < n_rows; p += kPanelRows)
      lanes_gemv(w.data + (r0 + p) / kPanelRows * tile_bytes, nb, x, t0,
                 n_rows - p < kPanelRows ? n_rows - p : kPanelRows, y + p);
    return;
  }
  for (size_t p = 0; p < n_rows; p += 2 * kPanelRows) {
    const size_t pr = n_rows - p < 2 * kPanelRows ? n_rows - p : 2 * kPanelRows;
    const uint8_t* tile = w.data + (r0 + p) / kPanelRows * tile_bytes;
    // The tiles read their blocks in chain order, strides the hardware prefetcher does not
    // follow: each pair of tiles fetches the next pair into L2 as it computes (prefetches past
    // the weight's end are dropped, never faulting).
    const Ahead ahead{reinterpret_cast<const char*>(tile + 2 * tile_bytes), 2 * tile_bytes / 64};
    panels_times_tokens<RepackedTile>(tile, nb, x, t0, n_tok, pr, y + p, ldy, ahead);
  }
}

}  // namespace gptoss::cpu
