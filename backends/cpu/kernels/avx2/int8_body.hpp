#pragma once
// The MXFP4 x int8 matmul of the avx2 level, written once over a `Dot` policy and included by
// the two translation units that instantiate it with their own -m flags (avx2/int8.cpp:
// vpmaddubsw + vpmaddwd; avx2vnni/int8.cpp: vpdpbusd). Everything here has internal linkage,
// so each TU keeps its own copy. The algebra is that of Q8Acts (kernels.hpp); the structure
// mirrors avx512vnni/int8.cpp on 256-bit vectors.
//
// Dot::dot2(acc, a0, b0, a1, b1) and Dot::dot4(acc, a0, b0, .., a3, b3) add to each int32 lane
// of acc the sum over the given pairs of the 4 products of its u8 bytes of a_i and s8 bytes of
// b_i. Codes are u8 0..24 (2v + 12), so vpmaddubsw's int16 pair sums (<= 2 * 24 * 127 = 6096)
// never saturate, nor does a sum of 4 of them (24384).
//
//   n_tok == 1: "row" layout. A 32-byte load takes blocks 2k, 2k + 1 of a row: low nibbles are
//   their evens, high nibbles their odds, which is where quad order puts their activations (at
//   +0 and +64 for the first pair of a group of 4, +32 and +96 for the second). int32 lanes
//   0-3 then belong to block 2k, 4-7 to 2k + 1; scaled by s_b d_b / 2 (one permute of 8
//   precomputed block scales) into an fp32 accumulator. 4 adjacent rows share each activation
//   load (here adjacent rows measured faster than far-apart ones: row_streams.hpp).
//
//   2 to 16 tokens of a decode step (gemv_step: the tokens of several sequences that chose one
//   expert): the same row layout and arithmetic per token, each pair of blocks of codes loaded
//   and mapped once for up to 4 tokens, 2 rows at a time.
//
//   n_tok > 1: "lane" layout. A panel of 8 rows is decoded once into int8, one row per 32-bit
//   lane (rows r and r + 4 share a 128-bit lane's transpose): for block b, group g (kernel-order
//   elements 4g..4g+3) is one ymm with those 4 weights of each row. A token then needs 8
//   products against its broadcast activations per block, one convert and one FMA.
//
//   A weight the upload laid out in tiles of 16 rows (Weight::mxfp4_lanes, formats.hpp): each
//   half tile already is a panel's groups, once its nibbles go through the table, so a decode
//   step's tokens read the tiles straight, both halves in one pass (lanes_tile_both_halves: no
//   unpacks to gather a block's sums, one stream per thread), and prefill decodes them into the
//   panels. The same sums per token as the panels, hence the rows' bits. (avx2vnni leaves the
//   layout out: no machine with AVX-VNNI has measured it.)
#include <immintrin.h>

#include "cpu_backend.hpp"
#include "formats.hpp"
#include "kernels.hpp"
#include "q8_quad.hpp"
#include "row_streams.hpp"

namespace gptoss::cpu {
namespace {

constexpr size_t kPanelRows = 8;
constexpr size_t kPrefetchBytes = 8192;  // the best single-stream distance (docs/performance.md)
// The prefill panels prefetch the panel the next iteration decodes (8 rows below), each of its
// cache lines once, a tile computation before it is read (docs/performance.md).
constexpr size_t kPrefetchRows = kPanelRows;

// nibble code -> 2v + 12: 0..7 -> 12 + {0,1,2,3,4,6,8,12}, 8..15 negated.
inline __m256i code_lut() {
  return _mm256_broadcastsi128_si256(
      _mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
}

// The codes (code_lut) of a vector's low nibbles, and of its high ones.
inline __m256i low_codes(__m256i packed, __m256i lut) {
  return _mm256_shuffle_epi8(lut, _mm256_and_si256(packed, _mm256_set1_epi8(0x0f)));
}
inline __m256i high_codes(__m256i packed, __m256i lut) {
  return _mm256_shuffle_epi8(
      lut, _mm256_and_si256(_mm256_srli_epi16(packed, 4), _mm256_set1_epi8(0x0f)));
}

// The low 8 E8M0 bytes -> 2^(e - 127) as floats, exactly: e << 23 is that float's bits for
// e >= 1 (at least 0x00800000), and the max gives e = 0 the subnormal 2^-127's, 0x00400000.
inline __m256 e8m0x8(__m128i bytes) {
  const __m256i e = _mm256_cvtepu8_epi32(bytes);
  return _mm256_castsi256_ps(
      _mm256_max_epi32(_mm256_slli_epi32(e, 23), _mm256_set1_epi32(0x00400000)));
}

// The panels hold a row's blocks in the order the chains (gemv_rows) take them: block b at slot
// (b % 8) * chain_len + b / 8, so a tile walks its panel front to back.
constexpr size_t kChains = 8;
inline size_t chain_len(size_t nb) { return (nb + kChains - 1) / kChains; }
inline size_t panel_slot(size_t b, size_t nb) {
  return (b % kChains) * chain_len(nb) + b / kChains;
}

inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Lanes i < n all ones.
inline __m256i lanes_below(size_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// --- n_tok == 1, and up to 16 tokens of a decode step: row layout ------------------------

// The order of a row's sum, which the lane layout below reproduces: per block b the exact int32
// sum S_b (codes times activations plus the -12 sum(q) offset) and its scale c_b = s_b * d_b / 2;
// 8 chains, chain m taking fma(S_b, c_b, .) for the blocks b = m (mod 8) in increasing order;
// then the chains added as hsum8 adds its lanes, chain m in lane kChainLane[m]. A row's result
// then depends on nothing but the row and the token's activations.

// One token's activations (quad order, see Q8Acts in kernels.hpp).
struct TokenActs {
  const int8_t* xq;
  const float* hd;
  const int32_t* nq;  // -12 sum(q) per block
};

inline TokenActs token_acts(const Q8Acts& x, size_t t) {
  return {x.q + t * x.q_stride, x.half_d + t * x.b_stride, x.neg_q12 + t * x.b_stride};
}

// Lane L of a chunk's block sums (8 blocks) holds the chunk's block 2 (L % 4) + L / 4: where the
// unpacks of gemv_chunk put it.
inline __m256i chunk_order() { return _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7); }

// R rows of a decode GEMV for T tokens: an accumulator per row and token (lane L: chain
// 2 (L % 4) + L / 4).
template <int R, int T>
struct GemvRows {
  const uint8_t* codes[R];
  const uint8_t* scales[R];
  __m256 acc[R][T];
};

// The int32 partial sums of blocks 2k, 2k + 1 (codes at byte 32k, activations at xo: evens,
// +64 odds) of every row for every token: lanes 0-3 block 2k, 4-7 block 2k + 1. The codes are
// loaded and mapped once for all tokens. A last odd block (whole false) loads only its 16 bytes
// (the rest could be past the tensor): the missing block's codes become 12, against zero
// activations. Past the row (2k >= nb): zero.
template <class Dot, int R, int T>
__attribute__((always_inline)) inline void pair_sums(const GemvRows<R, T>& st, size_t k, size_t xo,
                                                     size_t nb, bool prefetch, const TokenActs* x,
                                                     __m256i (&s)[R][T]) {
  if (2 * k >= nb) {
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) s[r][t] = _mm256_setzero_si256();
    return;
  }
  const bool whole = 2 * k + 2 <= nb;
  const __m256i lut = code_lut();
  __m256i x_even[T], x_odd[T];
  for (int t = 0; t < T; ++t) {
    x_even[t] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t].xq + xo));
    x_odd[t] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t].xq + xo + 64));
  }
  for (int r = 0; r < R; ++r) {
    const uint8_t* src = st.codes[r] + 32 * k;
    if (prefetch) _mm_prefetch(reinterpret_cast<const char*>(src) + kPrefetchBytes, _MM_HINT_T0);
    const __m256i c =
        whole ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src))
              : _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
    const __m256i lo = low_codes(c, lut);
    const __m256i hi = high_codes(c, lut);
    for (int t = 0; t < T; ++t)
      s[r][t] = Dot::dot2(_mm256_setzero_si256(), lo, x_even[t], hi, x_odd[t]);
  }
}

// Two pairs' partial sums folded (exact integer adds).
inline __m256i fold_pair(__m256i a, __m256i b) {
  return _mm256_add_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
}

// Chunk of blocks b0 .. b0 + 7 of every row for every token: the block sums S_b of its 4 pairs
// gathered into one vector (lane order of chunk_order), scaled, added to the chains.
template <class Dot, int R, int T>
__attribute__((always_inline)) inline void gemv_chunk(GemvRows<R, T>& st, size_t b0, size_t nb,
                                                      const TokenActs* x) {
  const __m256i order = chunk_order();
  const __m128i order_bytes = _mm_setr_epi8(0, 2, 4, 6, 1, 3, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const bool full = nb - b0 >= 8;
  __m256 h[T];
  __m256i off[T];
  for (int t = 0; t < T; ++t) {  // padding blocks have d = 0 and no offset
    h[t] = _mm256_permutevar8x32_ps(_mm256_loadu_ps(x[t].hd + b0), order);
    off[t] = _mm256_permutevar8x32_epi32(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t].nq + b0)), order);
  }
  __m256 cs[R][T];  // s_b * d_b / 2 in lane order
  for (int r = 0; r < R; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(st.scales[r] + b0) + kPrefetchBytes / 16,
                 _MM_HINT_T0);
    __m128i sb;
    if (full) {
      sb = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(st.scales[r] + b0));
    } else {  // missing blocks get scale byte 0; their half_d is 0 (padding)
      alignas(16) uint8_t tail[16] = {};
      for (size_t i = 0; i < nb - b0; ++i) tail[i] = st.scales[r][b0 + i];
      sb = _mm_load_si128(reinterpret_cast<const __m128i*>(tail));
    }
    const __m256 e = e8m0x8(_mm_shuffle_epi8(sb, order_bytes));
    for (int t = 0; t < T; ++t) cs[r][t] = _mm256_mul_ps(e, h[t]);
  }
  // Quad order: pairs at +0 and +32 of each group of 4 blocks (128 bytes).
  const size_t k0 = b0 / 2, xo = 128 * (b0 / 4);
  __m256i half[2][R][T];
  for (int p = 0; p < 2; ++p) {
    __m256i s0[R][T], s1[R][T];
    pair_sums<Dot, R, T>(st, k0 + 2 * size_t(p), xo + 128 * size_t(p), nb, true, x, s0);
    pair_sums<Dot, R, T>(st, k0 + 2 * size_t(p) + 1, xo + 128 * size_t(p) + 32, nb, false, x, s1);
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) half[p][r][t] = fold_pair(s0[r][t], s1[r][t]);
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) {
      const __m256i a = half[0][r][t], b = half[1][r][t];
      const __m256i sums = _mm256_add_epi32(
          _mm256_add_epi32(_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b)), off[t]);
      st.acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), cs[r][t], st.acc[r][t]);
    }
}

// Rows r0 .. r0 + R - 1 (adjacent) for T tokens into y[t * ldy + r].
template <class Dot, int R, int T>
void gemv_rows(const Weight& w, size_t r0, const TokenActs* x, float* y, size_t ldy) {
  const size_t nb = w.cols / 32;
  GemvRows<R, T> st;
  for (int r = 0; r < R; ++r) {
    st.codes[r] = w.data + (r0 + size_t(r)) * w.row_bytes;
    st.scales[r] = w.scales + (r0 + size_t(r)) * nb;
    for (int t = 0; t < T; ++t) st.acc[r][t] = _mm256_setzero_ps();
  }
  for (size_t b0 = 0; b0 < nb; b0 += 8) gemv_chunk<Dot, R, T>(st, b0, nb, x);
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) y[size_t(t) * ldy + size_t(r)] = hsum8(st.acc[r][t]);
}

// Rows [r0, r0 + n) for T tokens: R rows at a time (4 for one token, 2 for several: the
// tokens' accumulators, corrections and scales take the registers).
template <class Dot, int T>
void gemv_tokens(const Weight& w, size_t r0, size_t n, const TokenActs* x, float* y, size_t ldy) {
  constexpr int R = T == 1 ? 4 : 2;
  size_t i = 0;
  for (; i + R <= n; i += R) gemv_rows<Dot, R, T>(w, r0 + i, x, y + i, ldy);
  for (; i < n; ++i) gemv_rows<Dot, 1, T>(w, r0 + i, x, y + i, ldy);
}

constexpr size_t kStepGroupTokens = 4;

// Rows [r0, r0 + n) for tokens [t0, t0 + n_tok) (n_tok <= kStepGroupTokens) of x.
template <class Dot>
void gemv_token_group(const Weight& w, size_t r0, size_t n, const Q8Acts& x, size_t t0,
                      size_t n_tok, float* y, size_t ldy) {
  TokenActs a[kStepGroupTokens];
  for (size_t t = 0; t < n_tok; ++t) a[t] = token_acts(x, t0 + t);
  switch (n_tok) {
    case 1: return gemv_tokens<Dot, 1>(w, r0, n, a, y, ldy);
    case 2: return gemv_tokens<Dot, 2>(w, r0, n, a, y, ldy);
    case 3: return gemv_tokens<Dot, 3>(w, r0, n, a, y, ldy);
    default: return gemv_tokens<Dot, 4>(w, r0, n, a, y, ldy);
  }
}

// A decode step's tokens of one weight (Kernels::gemv_mxfp4_q8): groups of up to 4 tokens share
// each load and mapping of the codes; more tokens take their groups in turn over blocks of
// rows that stay in L2 (row_streams.hpp). Every token gets exactly its one-token result.
template <class Dot>
void gemv_step(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0, size_t n_tok,
               float* y, size_t ldy) {
  if (n_tok <= kStepGroupTokens) return gemv_token_group<Dot>(w, r0, n_rows, x, t0, n_tok, y, ldy);
  const size_t groups = (n_tok + kStepGroupTokens - 1) / kStepGroupTokens;
  for_each_token_block(
      n_rows, w.row_bytes + w.cols / 32, groups, [&](size_t b, size_t n, size_t g) {
        const size_t t = g * kStepGroupTokens,
                     tn = n_tok - t < kStepGroupTokens ? n_tok - t : kStepGroupTokens;
        gemv_token_group<Dot>(w, r0 + b, n, x, t0 + t, tn, y + t * ldy + b, ldy);
      });
}

// --- n_tok > 1: lane layout ---------------------------------------------------------------

// Rows [r0, r0 + n) (n <= 8; missing rows have scale 0) of w into panel: per block 8 ymm of
// weights then one ymm of row scales.
void decode_panel(const Weight& w, size_t r0, size_t n, __m256i* panel) {
  const size_t nb = w.cols / 32;
  const __m256i lut = code_lut();
  alignas(16) static const uint8_t zeros[16] = {};
  const uint8_t* row[kPanelRows];
  size_t step[kPanelRows];  // 16 bytes per block, 0 for a missing row (reads zeros forever)
  for (size_t i = 0; i < kPanelRows; ++i) {
    row[i] = i < n ? w.data + (r0 + i) * w.row_bytes : zeros;
    step[i] = i < n ? 16 : 0;
  }
  const __m256 valid = _mm256_castsi256_ps(lanes_below(n));
  const uint8_t* s0 = w.scales + r0 * nb;
  // Prefetches past the tensor's end are dropped, never faulting.
  const size_t ahead = kPrefetchRows * w.row_bytes;
  for (size_t off = 0; off < n * nb; off += 64)
    _mm_prefetch(reinterpret_cast<const char*>(s0 + kPrefetchRows * nb + off), _MM_HINT_T0);
  for (size_t b = 0; b < nb; ++b) {
    if (b % 4 == 0)
      for (size_t i = 0; i < n; ++i)
        _mm_prefetch(reinterpret_cast<const char*>(row[i] + 16 * b) + ahead, _MM_HINT_T0);
    // a[k]: 128-bit lane q holds the 16 code bytes of row 4q + k.
    __m256i lo[4], hi[4];
    for (size_t k = 0; k < 4; ++k) {
      const __m128i r_lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[k] + step[k] * b));
      const __m128i r_hi =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[4 + k] + step[4 + k] * b));
      const __m256i a = _mm256_inserti128_si256(_mm256_castsi128_si256(r_lo), r_hi, 1);
      lo[k] = low_codes(a, lut);
      hi[k] = high_codes(a, lut);
    }
    // 4x4 transposes of dwords inside each 128-bit lane: dword k of lane q of out[g] is group g
    // of row 4q + k, i.e. row r lands in lane r.
    __m256i* out = panel + 9 * panel_slot(b, nb);
    for (int h = 0; h < 2; ++h) {
      const __m256i* v = h == 0 ? lo : hi;
      const __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]), t1 = _mm256_unpackhi_epi32(v[0], v[1]);
      const __m256i t2 = _mm256_unpacklo_epi32(v[2], v[3]), t3 = _mm256_unpackhi_epi32(v[2], v[3]);
      _mm256_store_si256(out + 4 * h + 0, _mm256_unpacklo_epi64(t0, t2));
      _mm256_store_si256(out + 4 * h + 1, _mm256_unpackhi_epi64(t0, t2));
      _mm256_store_si256(out + 4 * h + 2, _mm256_unpacklo_epi64(t1, t3));
      _mm256_store_si256(out + 4 * h + 3, _mm256_unpackhi_epi64(t1, t3));
    }
    alignas(16) uint8_t sc[16] = {};
    for (size_t i = 0; i < n; ++i) sc[i] = s0[i * nb + b];
    const __m256 ws =
        _mm256_and_ps(valid, e8m0x8(_mm_load_si128(reinterpret_cast<const __m128i*>(sc))));
    _mm256_store_si256(out + 8, _mm256_castps_si256(ws));
  }
}

inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// A decoded panel's blocks as panel_tile takes them: chain(m) walks chain m's blocks (m, m + 8,
// ...) in turn, each 8 ymm of weights, then the row scales; the panel holds them front to back.
struct PanelBlocks {
  const __m256i* panel;
  size_t nb;
  struct Chain {
    const __m256i* wp;
    __attribute__((always_inline)) void next(__m256i (&wv)[8], __m256& ws) {
      for (int g = 0; g < 8; ++g) wv[g] = _mm256_load_si256(wp + g);
      ws = _mm256_castsi256_ps(_mm256_load_si256(wp + 8));
      wp += 9;
    }
  };
  Chain chain(size_t m) const { return {panel + 9 * panel_slot(m, nb)}; }
};

// Half h (rows 8h .. 8h + 7) of a Weight::mxfp4_lanes tile (formats.hpp), decoded a block at
// a time into a prefill panel (decode_panel_lanes): the low 32 bytes of each of a block's 4
// vectors hold rows 0-7, one row per dword, so each is a panel's group of weights with no
// transposition. The first half's pass fetches the same block of the next tile into L2, where
// the second half's pass finds this one.
struct LanesBlocks {
  const uint8_t* codes;   // the tile's codes + 32 h
  const uint8_t* scales;  // the tile's scales + 8 h
  size_t nb;
  bool prefetch;  // the first pass over the tile's lines
  // The block at position pos of the tile.
  __attribute__((always_inline)) void operator()(size_t pos, __m256i (&wv)[8], __m256& ws) const {
    const __m256i lut = code_lut();
    const uint8_t* c = codes + kMxfp4LanesBlockBytes * pos;
    if (prefetch) {  // prefetches past the tensor's end are dropped, never faulting
      const size_t tile_bytes = kMxfp4LanesBlockBytes * nb;
      for (size_t l = 0; l < kMxfp4LanesBlockBytes; l += 64)
        _mm_prefetch(reinterpret_cast<const char*>(c) + tile_bytes + l, _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(scales + 16 * pos) + 16 * nb, _MM_HINT_T1);
    }
    for (int g = 0; g < 4; ++g) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + 64 * g));
      wv[g] = low_codes(v, lut);
      wv[4 + g] = high_codes(v, lut);
    }
    ws = e8m0x8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales + 16 * pos)));
  }
};

// y[t * ldy + r] for r < n_rows (<= 8), t < TN: 8 rows (a panel, or half a lanes tile) times TN
// tokens. The row layout's order (gemv_rows): the blocks of chain m (b = m mod 8) in turn, one
// chain after another, then the chains added as hsum8 adds its lanes.
template <class Dot, int TN, class Blocks>
void panel_tile(const Blocks& blocks, size_t nb, const Q8Acts& x, size_t t0, size_t n_rows,
                float* y, size_t ldy) {
  constexpr size_t kChainLane[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  // Token n's data at n strides from token 0's; a chain's next block is 8 blocks on: 256
  // bytes on in quad order, 8 entries on in the per-block terms.
  const int8_t* xq0 = x.q + t0 * x.q_stride;
  const float* hd0 = x.half_d + t0 * x.b_stride;
  const int32_t* qi0 = x.neg_q12 + t0 * x.b_stride;  // -12 sum(q): the code offset
  __m256 part[8][TN];
  for (size_t m = 0; m < 8; ++m) {
    __m256 acc[TN];
    for (int n = 0; n < TN; ++n) acc[n] = _mm256_setzero_ps();
    auto chain = blocks.chain(m);
    const int8_t* xe = xq0 + quad_evens(m);  // groups 0-3 (evens) at +0, 4-7 (odds) at +64
    const float* hd = hd0 + m;
    const int32_t* qi = qi0 + m;
    for (size_t b = m; b < nb; b += 8, xe += 256, hd += 8, qi += 8) {
      __m256i wv[8];
      __m256 ws;
      chain.next(wv, ws);
      for (int n = 0; n < TN; ++n) {
        const int8_t* xn = xe + size_t(n) * x.q_stride;
        const size_t bn = size_t(n) * x.b_stride;
        __m256i s = _mm256_set1_epi32(qi[bn]);
        s = Dot::dot4(s, wv[0], bcast4(xn), wv[1], bcast4(xn + 4), wv[2], bcast4(xn + 8), wv[3],
                      bcast4(xn + 12));
        s = Dot::dot4(s, wv[4], bcast4(xn + 64), wv[5], bcast4(xn + 68), wv[6], bcast4(xn + 72),
                      wv[7], bcast4(xn + 76));
        acc[n] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(ws, _mm256_set1_ps(hd[bn])),
                                 acc[n]);
      }
    }
    for (int n = 0; n < TN; ++n) part[kChainLane[m]][n] = acc[n];
  }
  // The lanes' tree of hsum8: lane L with L + 4, then + 2, + 1.
  for (size_t w = 4; w >= 1; w /= 2)
    for (size_t l = 0; l < w; ++l)
      for (int n = 0; n < TN; ++n) part[l][n] = _mm256_add_ps(part[l][n], part[l + w][n]);
  const __m256i m = lanes_below(n_rows);
  for (int n = 0; n < TN; ++n) {
    float* dst = y + size_t(n) * ldy;
    if (n_rows >= kPanelRows) _mm256_storeu_ps(dst, part[0][n]);
    else _mm256_maskstore_ps(dst, m, part[0][n]);
  }
}

constexpr size_t kTileTokens = 4;

// Tokens [t0, t0 + n_tok) through panel_tile, kTileTokens at a time, on the same 8 rows.
template <class Dot, class Blocks>
void tiles_for_tokens(const Blocks& blocks, size_t nb, const Q8Acts& x, size_t t0, size_t n_tok,
                      size_t n_rows, float* y, size_t ldy) {
  for (size_t t = 0; t < n_tok; t += kTileTokens) {
    const size_t tn = n_tok - t < kTileTokens ? n_tok - t : kTileTokens;
    float* yt = y + t * ldy;
    switch (tn) {
      case 1: panel_tile<Dot, 1>(blocks, nb, x, t0 + t, n_rows, yt, ldy); break;
      case 2: panel_tile<Dot, 2>(blocks, nb, x, t0 + t, n_rows, yt, ldy); break;
      case 3: panel_tile<Dot, 3>(blocks, nb, x, t0 + t, n_rows, yt, ldy); break;
      default: panel_tile<Dot, 4>(blocks, nb, x, t0 + t, n_rows, yt, ldy); break;
    }
  }
}

using PanelDecode = void (*)(const Weight& w, size_t r0, size_t n, __m256i* panel);

// Prefill: each panel of 8 rows decoded once (by decode) for all the tokens.
template <class Dot>
void matmul_panels(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                   size_t n_tok, float* y, size_t ldy, PanelDecode decode) {
  const size_t nb = w.cols / 32, ymm_per_panel = 9 * kChains * chain_len(nb);
  __m256i* panel = reinterpret_cast<__m256i*>(thread_scratch(ymm_per_panel * 8, 2));
  for (size_t p = 0; p < n_rows; p += kPanelRows) {
    const size_t pr = n_rows - p < kPanelRows ? n_rows - p : kPanelRows;
    decode(w, r0 + p, pr, panel);
    tiles_for_tokens<Dot>(PanelBlocks{panel, nb}, nb, x, t0, n_tok, pr, y + p, ldy);
  }
}

template <class Dot>
void matmul_q8(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0, size_t n_tok,
               float* y, size_t ldy) {
  if (n_tok == 1) return gemv_token_group<Dot>(w, r0, n_rows, x, t0, 1, y, ldy);
  matmul_panels<Dot>(w, r0, n_rows, x, t0, n_tok, y, ldy, decode_panel);
}

// --- Weight::mxfp4_lanes: the codes repacked at upload into tiles of 16 rows -------------

// The half of its tile that row r (a multiple of 8) starts, as LanesBlocks reads it; the first
// half's pass streams the tile in.
inline LanesBlocks half_tile(const Weight& w, size_t r) {
  const size_t nb = w.cols / 32, h = r % 16 / 8, tile = r - 8 * h;
  return {w.data + tile * w.row_bytes + 32 * h, w.scales + tile * nb + 8 * h, nb, h == 0};
}

// TN tokens times a tile of 16 rows (rows [r0, r0 + n_rows), r0 a multiple of 16, n_rows <= 16):
// both halves at once, so a block's lines are read once, in one pass, and the prefetch of the
// next tile's same block (into L2) runs through all of it, where a pass per half tile left the
// memory idle through the second (docs/performance.md, "The AVX2 experts' tiles in one pass").
// The chains here are 8 and the tile's 16, so chain m's blocks alternate between the tile's
// chains m and m + 8. Each half gets panel_tile's sums: the same integers (exact, in any order)
// scaled into the same chains in the same order, hence the rows' bits.
// prefetch: the first group of tokens over the tile (later groups find the next tile fetched).
template <class Dot, int TN>
void lanes_tile_both_halves(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                            float* y, size_t ldy, bool prefetch) {
  constexpr size_t kChainLane[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  const size_t nb = w.cols / 32, tile_bytes = kMxfp4LanesBlockBytes * nb;
  const uint8_t* codes = w.data + r0 * w.row_bytes;
  const uint8_t* scales = w.scales + r0 * nb;
  const __m256i lut = code_lut();
  // Token n's data at n strides from token 0's, as in panel_tile.
  const int8_t* xq0 = x.q + t0 * x.q_stride;
  const float* hd0 = x.half_d + t0 * x.b_stride;
  const int32_t* qi0 = x.neg_q12 + t0 * x.b_stride;
  __m256 part[2][8][TN];
  for (size_t m = 0; m < 8; ++m) {
    __m256 acc[2][TN];
    for (int h = 0; h < 2; ++h)
      for (int n = 0; n < TN; ++n) acc[h][n] = _mm256_setzero_ps();
    // Chain m's blocks m + 8j lie on the tile's chains m (j even) and m + 8 (j odd).
    size_t pos[2] = {mxfp4_lanes_pos(m, nb), m + 8 < nb ? mxfp4_lanes_pos(m + 8, nb) : 0};
    int run = 0;
    const int8_t* xe = xq0 + quad_evens(m);  // groups 0-3 (evens) at +0, 4-7 (odds) at +64
    const float* hd = hd0 + m;
    const int32_t* qi = qi0 + m;
    for (size_t b = m; b < nb; b += 8, xe += 256, hd += 8, qi += 8) {
      const size_t at = pos[run]++;
      run ^= 1;
      const uint8_t* c = codes + kMxfp4LanesBlockBytes * at;
      const uint8_t* sc = scales + 16 * at;
      if (prefetch) {  // prefetches past the tensor's end are dropped, never faulting
        for (size_t l = 0; l < kMxfp4LanesBlockBytes; l += 64)
          _mm_prefetch(reinterpret_cast<const char*>(c) + tile_bytes + l, _MM_HINT_T1);
        _mm_prefetch(reinterpret_cast<const char*>(sc) + 16 * nb, _MM_HINT_T1);
      }
      __m256i s[2][TN];
      for (int h = 0; h < 2; ++h)
        for (int n = 0; n < TN; ++n) s[h][n] = _mm256_set1_epi32(qi[size_t(n) * x.b_stride]);
      // Vector g: low nibbles group g (activations xe + 4g), high nibbles group 4 + g (xe + 64 +
      // 4g); its low 32 bytes rows 0-7, its high 32 bytes rows 8-15. Two vectors at a time: 4
      // products per int16 sum.
      for (int g = 0; g < 4; g += 2)
        for (int h = 0; h < 2; ++h) {
          const __m256i v0 =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + 64 * g + 32 * h));
          const __m256i v1 =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + 64 * g + 64 + 32 * h));
          const __m256i e0 = low_codes(v0, lut);
          const __m256i o0 = high_codes(v0, lut);
          const __m256i e1 = low_codes(v1, lut);
          const __m256i o1 = high_codes(v1, lut);
          for (int n = 0; n < TN; ++n) {
            const int8_t* xn = xe + size_t(n) * x.q_stride + 4 * g;
            s[h][n] = Dot::dot4(s[h][n], e0, bcast4(xn), o0, bcast4(xn + 64), e1, bcast4(xn + 4),
                                o1, bcast4(xn + 68));
          }
        }
      for (int h = 0; h < 2; ++h) {
        const __m256 ws = e8m0x8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 8 * h)));
        for (int n = 0; n < TN; ++n)
          acc[h][n] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[h][n]),
                                      _mm256_mul_ps(ws, _mm256_set1_ps(hd[size_t(n) * x.b_stride])),
                                      acc[h][n]);
      }
    }
    for (int h = 0; h < 2; ++h)
      for (int n = 0; n < TN; ++n) part[h][kChainLane[m]][n] = acc[h][n];
  }
  // The lanes' tree of hsum8 (panel_tile's), per half.
  for (int h = 0; h < 2; ++h)
    for (size_t wd = 4; wd >= 1; wd /= 2)
      for (size_t l = 0; l < wd; ++l)
        for (int n = 0; n < TN; ++n)
          part[h][l][n] = _mm256_add_ps(part[h][l][n], part[h][l + wd][n]);
  for (int h = 0; h < 2; ++h) {
    const size_t rows = n_rows > kPanelRows * size_t(h) ? n_rows - kPanelRows * size_t(h) : 0;
    const __m256i m = lanes_below(rows);
    for (int n = 0; n < TN; ++n) {
      float* dst = y + size_t(n) * ldy + kPanelRows * size_t(h);
      if (rows >= kPanelRows) _mm256_storeu_ps(dst, part[h][0][n]);
      else _mm256_maskstore_ps(dst, m, part[h][0][n]);
    }
  }
}

// decode_panel for a weight with mxfp4_lanes: rows [r0, r0 + 8) (r0 a multiple of 8), half of a
// tile, walked in the tile's order (one stream) and stored in the panel's. (Unused where a
// level includes this body without taking the layout: avx2vnni.)
[[maybe_unused]] void decode_panel_lanes(const Weight& w, size_t r0, size_t, __m256i* panel) {
  const size_t nb = w.cols / 32;
  const LanesBlocks blocks = half_tile(w, r0);
  size_t pos = 0;  // the tile's order: chain m's blocks m, m + 16, ... at consecutive positions
  for (size_t m = 0; m < 16; ++m)
    for (size_t b = m; b < nb; b += 16) {
      __m256i* out = panel + 9 * panel_slot(b, nb);
      __m256i wv[8];
      __m256 ws;
      blocks(pos++, wv, ws);
      for (int g = 0; g < 8; ++g) _mm256_store_si256(out + g, wv[g]);
      _mm256_store_si256(out + 8, _mm256_castps_si256(ws));
    }
}

// Tokens [t0, t0 + n_tok) through lanes_tile_both_halves, kTileTokens at a time, on the tile at
// row r (rows [r, r + n_rows)).
template <class Dot>
void tile_for_tokens(const Weight& w, size_t r, size_t n_rows, const Q8Acts& x, size_t t0,
                     size_t n_tok, float* y, size_t ldy) {
  for (size_t t = 0; t < n_tok; t += kTileTokens) {
    const size_t tn = n_tok - t < kTileTokens ? n_tok - t : kTileTokens;
    float* yt = y + t * ldy;
    switch (tn) {
      case 1: lanes_tile_both_halves<Dot, 1>(w, r, n_rows, x, t0 + t, yt, ldy, t == 0); break;
      case 2: lanes_tile_both_halves<Dot, 2>(w, r, n_rows, x, t0 + t, yt, ldy, t == 0); break;
      case 3: lanes_tile_both_halves<Dot, 3>(w, r, n_rows, x, t0 + t, yt, ldy, t == 0); break;
      default: lanes_tile_both_halves<Dot, 4>(w, r, n_rows, x, t0 + t, yt, ldy, t == 0); break;
    }
  }
}

// Kernels::matmul_mxfp4_lanes_q8 of the level (r0 a multiple of 16): a decode step's few tokens
// straight from the tiles (each tile once per group of kTileTokens, the first pass streaming it
// in), more through the panels; the bits of matmul_q8 and gemv_step on the rows.
template <class Dot>
void matmul_lanes(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                  size_t n_tok, float* y, size_t ldy) {
  if (n_tok > kGemvStepTokens)
    return matmul_panels<Dot>(w, r0, n_rows, x, t0, n_tok, y, ldy, decode_panel_lanes);
  for (size_t i = 0; i < n_rows; i += 16) {
    const size_t rows = n_rows - i < 16 ? n_rows - i : 16;
    tile_for_tokens<Dot>(w, r0 + i, rows, x, t0, n_tok, y + i, ldy);
  }
}

}  // namespace
}  // namespace gptoss::cpu
