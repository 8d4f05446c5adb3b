// The fast-mode kernels of the avx512vnni level (also in the avx512bf16 table): MXFP4 weights
// times int8 activations with vpdpbusd (64 multiply-adds per instruction against 16 for an fp32
// FMA, and no widening of weights to fp32). Built with -mavx512vnni on top of the AVX-512
// flags. The scalar definitions are quantize_q8_reference and matmul_mxfp4_q8_reference
// (scalar/matmul.cpp); see Q8Acts in kernels.hpp for the algebra.
//
// Codes are mapped to unsigned weights u = 2v + 12 by a 16-entry vpshufb table.
//
//   n_tok == 1 (decode, memory-bound): "row" layout. One 64-byte load takes 4 blocks of a
//   row; its low nibbles are the even elements of those blocks and its high nibbles the odd
//   ones, which is how quantize_q8 lays out the activations ("quad order", kernels.hpp). Two
//   vpdpbusd then give block b + i of the group in lanes 4i..4i+3; those int32 sums are scaled
//   by s_b * d_b / 2 (one permute of 16 precomputed block scales) into an fp32 accumulator.
//   4 rows a quarter of the caller's range apart share each activation load (row_streams.hpp).
//
//   2 to 16 tokens of a decode step (gemv_mxfp4_q8: the tokens of several sequences that chose
//   one expert): the same row layout and arithmetic per token, each group of codes loaded and
//   mapped once for up to 4 tokens, 2 rows far apart.
//
//   n_tok > 1 (prefill, compute-bound): "lane" layout. A panel of 16 rows is decoded once
//   into int8 with one row per 32-bit lane: for block b, group g (kernel-order elements
//   4g..4g+3) is one zmm holding those 4 weights of each of the 16 rows. A token then needs
//   8 vpdpbusd with its 4 activations broadcast per group, accumulating a whole block per
//   row in int32, and one convert + scale per block: 16 rows x 32 products in 12 instructions.
//
//   Weight::mxfp4_lanes (the experts as the fast precision's upload repacks them): the lane
//   layout's groups stored as nibbles, a tile's blocks in the order the panels' chains take
//   them. Up to 16 tokens compute straight from the tiles (matmul_mxfp4_lanes_q8, 8 tokens a
//   pass), more through panels decoded from them; every path the same arithmetic per token.
#include <immintrin.h>

#include "avx512vnni/avx512vnni.hpp"
#include "cpu_backend.hpp"
#include "formats.hpp"
#include "kernels.hpp"
#include "q8_quad.hpp"
#include "row_streams.hpp"

namespace gptoss::cpu {
namespace {

constexpr size_t kPanelRows = 16;
// The prefill panels prefetch the rows this far below the ones they decode: the pair of panels
// that the next call decodes (in the MoE, the next piece of the expert: 32 rows a piece), so
// each of its cache lines is asked for once, a whole tile computation before it is read. A
// distance of a few KiB would land inside the panel being decoded (a row is 1440 bytes) and
// leave most lines of the next panel's first rows to stall the decode (docs/performance.md).
constexpr size_t kPrefetchRows = 2 * kPanelRows;
// Decode GEMVs read 4 rows a quarter of the range apart (row_streams.hpp), prefetching the
// codes this far ahead of each into L2 only (prefetcht1) and the scales this far ahead into L1.
// Into L1, the codes' prefetches (8 streams per core, codes and scales) took the miss buffers
// the demand loads need: a Zen 4 decodes a token's experts about a fifth faster with T1
// (docs/performance.md, "Decode GEMVs").
constexpr size_t kFarRowsPrefetchBytes = 1024;
constexpr size_t kFarScalesPrefetchBytes = 256;

// nibble code -> 2v + 12 (v = E2M1 value): 0..7 -> 12 + {0,1,2,3,4,6,8,12}, 8..15 negated.
inline __m512i code_lut() {
  return _mm512_broadcast_i32x4(
      _mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
}

// The codes (code_lut) of a vector's low nibbles, and of its high ones.
inline __m512i low_codes(__m512i packed, __m512i lut) {
  return _mm512_shuffle_epi8(lut, _mm512_and_si512(packed, _mm512_set1_epi8(0x0f)));
}
inline __m512i high_codes(__m512i packed, __m512i lut) {
  return _mm512_shuffle_epi8(
      lut, _mm512_and_si512(_mm512_srli_epi16(packed, 4), _mm512_set1_epi8(0x0f)));
}

// 16 E8M0 bytes -> 2^(e - 127) as floats, exactly: e << 23 is that float's bits for e >= 1
// (at least 0x00800000), and the max gives e = 0 the subnormal 2^-127's, 0x00400000.
inline __m512 e8m0x16(__m128i bytes) {
  const __m512i e = _mm512_cvtepu8_epi32(bytes);
  return _mm512_castsi512_ps(
      _mm512_max_epi32(_mm512_slli_epi32(e, 23), _mm512_set1_epi32(0x00400000)));
}

// The panels hold a row's blocks in the order the chains (gemv_rows) take them: block b at slot
// (b % 16) * chain_len + b / 16, so a tile walks its panel front to back.
constexpr size_t kChains = 16;
inline size_t chain_len(size_t nb) { return (nb + kChains - 1) / kChains; }
inline size_t panel_slot(size_t b, size_t nb) {
  return (b % kChains) * chain_len(nb) + b / kChains;
}

inline __mmask16 mask16(size_t n) {
  return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1u);
}

void quantize_q8(const float* x, size_t ldx, size_t n_tok, Q8Acts& out) {
  const size_t nb = out.cols / 32;
  const __m512 sign = _mm512_set1_ps(-0.0f);
  for (size_t t = 0; t < n_tok; ++t) {
    const float* xr = x + t * ldx;
    int8_t* q = out.q + t * out.q_stride;
    for (size_t b = 0; b < nb; ++b) {
      const __m512 a = _mm512_loadu_ps(xr + 32 * b), c = _mm512_loadu_ps(xr + 32 * b + 16);
      const float amax =
          _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, a), _mm512_andnot_ps(sign, c)));
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      const __m512i qa = _mm512_cvtps_epi32(_mm512_mul_ps(a, _mm512_set1_ps(id)));
      const __m512i qc = _mm512_cvtps_epi32(_mm512_mul_ps(c, _mm512_set1_ps(id)));
      // Natural order in, quad order out: the 16 even elements, then (at +64) the 16 odd ones.
      const __m128i split = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
      const __m128i sa = _mm_shuffle_epi8(_mm512_cvtsepi32_epi8(qa), split);
      const __m128i sc = _mm_shuffle_epi8(_mm512_cvtsepi32_epi8(qc), split);
      int8_t* dst = q + quad_evens(b);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_unpacklo_epi64(sa, sc));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 64), _mm_unpackhi_epi64(sa, sc));
      const int32_t sum = _mm512_reduce_add_epi32(_mm512_add_epi32(qa, qc));
      store_block_terms(out, t, b, d, sum);
    }
    zero_row_padding(out, t, nb);
  }
}

// --- decode (1 token, or up to 16 of a step): row layout --------------------------------
//
// The order of a row's sum, which the lane layout below reproduces: per block b the exact int32
// sum S_b (codes times activations plus the -12 sum(q) offset) and its scale c_b = s_b * d_b / 2;
// 16 chains, chain m taking fma(S_b, c_b, .) for the blocks b = m (mod 16) in increasing order;
// then the chains added as _mm512_reduce_add_ps adds its lanes, chain m in lane kChainLane[m].
// A row's result then depends on nothing but the row and the token's activations.

// One token's activations (quad order, see Q8Acts in kernels.hpp).
struct TokenActs {
  const int8_t* xq;
  const float* hd;
  const int32_t* nq;  // the weight format's offset term per block: -12 sum(q) or -128 sum(q)
};

// Lane L of a chunk's block sums (16 blocks) holds the chunk's block 4 (L % 4) + L / 4: where
// the unpacks of chunk_sums put it. The same permutation takes blocks to lanes and back.
inline __m512i chunk_order() {
  return _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
}

// The weight formats of the int8 kernels, as the row layout reads them. A format F gives:
//   F::weights<Whole>(row, scales, g, nb, even, odd): the unsigned weights of group g (blocks
//     4g .. 4g + 3) of a row, lined up with the activations' quad order: even holds the 16 even
//     elements of each block in 128-bit lane i, odd the odd ones. Whole: the 4 blocks exist.
//   F::chunk_scales<Whole>(row, scales, b0, nb): the 16 block scales of blocks b0 .. b0 + 15 in
//     chunk_order's lanes, times 2 for Q8_0 (so that scale times half_d is the block's step).
//   F::offsets(x): the per-block offset term of the unsigned mapping.
//
// MXFP4: 16 code bytes per block, E8M0 scales in their own array; u = 2v + 12.
struct Mxfp4 {
  template <bool Whole>
  __attribute__((always_inline)) static void weights(const uint8_t* row, const uint8_t*, size_t g,
                                                     size_t nb, __m512i& even, __m512i& odd) {
    const uint8_t* src = row + 64 * g;
    __m512i c;
    if constexpr (Whole) {
      // Plain loads: a masked load in the main loop defeats the hardware prefetcher.
      _mm_prefetch(reinterpret_cast<const char*>(src) + kFarRowsPrefetchBytes, _MM_HINT_T1);
      c = _mm512_loadu_si512(src);
    } else {
      const size_t b0 = 4 * g;
      c = _mm512_maskz_loadu_epi8(
          nb - b0 >= 4 ? ~__mmask64(0) : (__mmask64(1) << (16 * (nb - b0))) - 1, src);
    }
    const __m512i lut = code_lut();
    even = low_codes(c, lut);
    odd = high_codes(c, lut);
  }
  template <bool Whole>
  __attribute__((always_inline)) static __m512 chunk_scales(const uint8_t*, const uint8_t* scales,
                                                            size_t b0, size_t nb) {
    const __m128i order_bytes = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    // The scales are a second stream (1/16 of the codes' bytes), 16 chunks ahead.
    _mm_prefetch(reinterpret_cast<const char*>(scales + b0) + kFarScalesPrefetchBytes, _MM_HINT_T0);
    const __m128i sb = Whole ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + b0))
                             : _mm_maskz_loadu_epi8(mask16(nb - b0), scales + b0);
    return e8m0x16(_mm_shuffle_epi8(sb, order_bytes));
  }
  static const int32_t* offsets(const Q8Acts& x) { return x.neg_q12; }
};

// Q8_0: 34-byte blocks {f16 e; int8 w[32]} in natural order; u = w + 128. Each block's 32 bytes
// are split into evens and odds per 128-bit lane (one vpshufb), and two qword permutes gather
// the halves of 4 blocks into the quad order.
struct Q8_0 {
  static constexpr size_t kBlockBytes = 34;
  template <bool Whole>
  __attribute__((always_inline)) static void weights(const uint8_t* row, const uint8_t*, size_t g,
                                                     size_t nb, __m512i& even, __m512i& odd) {
    const uint8_t* p = row + kBlockBytes * 4 * g;
    __m256i blk[4];
    if constexpr (Whole) {
      for (int i = 0; i < 3; ++i)  // the group's 136 bytes, a line at a time
        _mm_prefetch(reinterpret_cast<const char*>(p) + kFarRowsPrefetchBytes + 64 * i,
                     _MM_HINT_T1);
      for (int i = 0; i < 4; ++i)
        blk[i] =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kBlockBytes * size_t(i) + 2));
    } else {
      for (size_t i = 0; i < 4; ++i)
        blk[i] = 4 * g + i < nb
                     ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kBlockBytes * i + 2))
                     : _mm256_setzero_si256();
    }
    const __m512i split =
        _mm512_broadcast_i32x4(_mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
    const __m512i bias = _mm512_set1_epi8(char(0x80));
    // a: qwords [b0 e0-7, b0 o0-7, b0 e8-15, b0 o8-15, b1 e0-7, ...]; b the same for b2, b3.
    const __m512i a =
        _mm512_shuffle_epi8(_mm512_inserti64x4(_mm512_castsi256_si512(blk[0]), blk[1], 1), split);
    const __m512i b =
        _mm512_shuffle_epi8(_mm512_inserti64x4(_mm512_castsi256_si512(blk[2]), blk[3], 1), split);
    even = _mm512_xor_si512(
        _mm512_permutex2var_epi64(a, _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), b), bias);
    odd = _mm512_xor_si512(
        _mm512_permutex2var_epi64(a, _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15), b), bias);
  }
  template <bool Whole>
  __attribute__((always_inline)) static __m512 chunk_scales(const uint8_t* row, const uint8_t*,
                                                            size_t b0, size_t nb) {
    // The dword at each block's start holds its f16 step in the low half.
    const __m512i at = _mm512_mullo_epi32(chunk_order(), _mm512_set1_epi32(int(kBlockBytes)));
    const __mmask16 valid = Whole ? __mmask16(0xffff) : mask16_ordered(nb - b0);
    const __m512i d =
        _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid, at, row + kBlockBytes * b0, 1);
    const __m512 e = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d));
    return _mm512_add_ps(e, e);
  }
  static const int32_t* offsets(const Q8Acts& x) { return x.neg_q128; }

 private:
  // The lanes of chunk_order whose block is below n.
  static __mmask16 mask16_ordered(size_t n) {
    return _mm512_cmplt_epu32_mask(chunk_order(), _mm512_set1_epi32(int(n < 16 ? n : 16)));
  }
};

// State of R rows of a decode GEMV for T tokens: an accumulator per row and token (lane L:
// chain 4 (L % 4) + L / 4).
template <int R, int T>
struct GemvRows {
  const uint8_t* codes[R];
  const uint8_t* scales[R];  // MXFP4's scale rows (unused for Q8_0)
  __m512 acc[R][T];
};

// The int32 partial sums of group g (blocks 4g .. 4g + 3) of every row for every token: lanes
// 4i .. 4i + 3 hold four partial sums of block 4g + i.
template <typename F, int R, int T, bool Whole>
__attribute__((always_inline)) inline void group_sums(const GemvRows<R, T>& st, size_t g, size_t nb,
                                                      const TokenActs* x, __m512i (&s)[R][T]) {
  if (!Whole && 4 * g >= nb) {  // past the row: a zero sum
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) s[r][t] = _mm512_setzero_si512();
    return;
  }
  __m512i x_even[T], x_odd[T];
  for (int t = 0; t < T; ++t) {
    x_even[t] = _mm512_loadu_si512(x[t].xq + 128 * g);
    x_odd[t] = _mm512_loadu_si512(x[t].xq + 128 * g + 64);
  }
  for (int r = 0; r < R; ++r) {
    __m512i even, odd;
    F::template weights<Whole>(st.codes[r], st.scales[r], g, nb, even, odd);
    for (int t = 0; t < T; ++t)
      s[r][t] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), even, x_even[t]),
                                    odd, x_odd[t]);
  }
}

// Two groups' partial sums folded: lanes 4i + 2 hold (d0 + d2, d1 + d3) of the first, + 1 and
// + 3 of the second (exact integer adds).
inline __m512i fold_pair(__m512i a, __m512i b) {
  return _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
}

// Chunk c (blocks 16c .. 16c + 15) of every row for every token: the block sums S_b of its 4
// groups gathered into one vector (lane order of chunk_order), scaled, added to the chains.
template <typename F, int R, int T, bool Whole>
__attribute__((always_inline)) inline void gemv_chunk(GemvRows<R, T>& st, size_t c, size_t nb,
                                                      const TokenActs* x) {
  const size_t b0 = 16 * c;
  const __m512i order = chunk_order();
  __m512 h[T];
  __m512i off[T];
  for (int t = 0; t < T; ++t) {  // padding blocks have d = 0 and no offset
    h[t] = _mm512_permutexvar_ps(order, _mm512_loadu_ps(x[t].hd + b0));
    off[t] = _mm512_permutexvar_epi32(order, _mm512_loadu_si512(x[t].nq + b0));
  }
  __m512 cs[R][T];  // s_b * d_b / 2 in lane order
  for (int r = 0; r < R; ++r) {
    const __m512 e = F::template chunk_scales<Whole>(st.codes[r], st.scales[r], b0, nb);
    for (int t = 0; t < T; ++t) cs[r][t] = _mm512_mul_ps(e, h[t]);
  }
  __m512i half[2][R][T];
  for (int p = 0; p < 2; ++p) {
    __m512i s0[R][T], s1[R][T];
    group_sums<F, R, T, Whole>(st, 4 * c + 2 * size_t(p), nb, x, s0);
    group_sums<F, R, T, Whole>(st, 4 * c + 2 * size_t(p) + 1, nb, x, s1);
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) half[p][r][t] = fold_pair(s0[r][t], s1[r][t]);
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) {
      const __m512i a = half[0][r][t], b = half[1][r][t];
      const __m512i sums = _mm512_add_epi32(
          _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b)), off[t]);
      st.acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), cs[r][t], st.acc[r][t]);
    }
}

// Rows r0 + r * step (r < R) for T tokens into y[t * ldy + r * step].
template <typename F, int R, int T>
void gemv_rows(const Weight& w, size_t r0, size_t step, const TokenActs* x, float* y, size_t ldy) {
  const size_t nb = w.cols / 32, whole_chunks = nb / 16;
  GemvRows<R, T> st;
  for (int r = 0; r < R; ++r) {
    st.codes[r] = w.data + (r0 + size_t(r) * step) * w.row_bytes;
    st.scales[r] = w.scales != nullptr ? w.scales + (r0 + size_t(r) * step) * nb : nullptr;
    for (int t = 0; t < T; ++t) st.acc[r][t] = _mm512_setzero_ps();
  }
  for (size_t c = 0; c < whole_chunks; ++c) gemv_chunk<F, R, T, true>(st, c, nb, x);
  if (nb % 16 != 0) gemv_chunk<F, R, T, false>(st, whole_chunks, nb, x);
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t)
      y[size_t(t) * ldy + size_t(r) * step] = _mm512_reduce_add_ps(st.acc[r][t]);
}

template <typename F>
TokenActs token_acts(const Q8Acts& x, size_t t) {
  return {x.q + t * x.q_stride, x.half_d + t * x.b_stride, F::offsets(x) + t * x.b_stride};
}

// Rows [r0, r0 + n_rows) for token t of x: 4 rows a quarter of the range apart.
template <typename F>
void gemv_token(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t, float* y) {
  const TokenActs a = token_acts<F>(x, t);
  for_each_row_quad(
      n_rows, [&](size_t i, size_t step) { gemv_rows<F, 4, 1>(w, r0 + i, step, &a, y + i, 0); },
      [&](size_t i) { gemv_rows<F, 1, 1>(w, r0 + i, 1, &a, y + i, 0); });
}

// 2 to 4 tokens of a decode step (those of several sequences that chose the same expert): 2 rows
// half the range apart (6T registers per row), but one row at a time for 4 tokens: 2 rows of 4
// spill, and one row computes a quarter faster (docs/performance.md, "Several sequences' step").
template <typename F, int T>
void gemv_tokens(const Weight& w, size_t r0, size_t n_rows, const TokenActs* x, float* y,
                 size_t ldy) {
  if constexpr (T == 4) {
    for (size_t i = 0; i < n_rows; ++i) gemv_rows<F, 1, T>(w, r0 + i, 1, x, y + i, ldy);
    return;
  }
  for_each_row_pair(
      n_rows, [&](size_t i, size_t step) { gemv_rows<F, 2, T>(w, r0 + i, step, x, y + i, ldy); },
      [&](size_t i) { gemv_rows<F, 1, T>(w, r0 + i, 1, x, y + i, ldy); });
}

constexpr size_t kStepGroupTokens = 4;

// Rows [r0, r0 + n_rows) for tokens [t0, t0 + n_tok) (n_tok <= kStepGroupTokens).
template <typename F>
void gemv_token_group(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                      size_t n_tok, float* y, size_t ldy) {
  if (n_tok == 1) return gemv_token<F>(w, r0, n_rows, x, t0, y);
  TokenActs a[kStepGroupTokens];
  for (size_t t = 0; t < n_tok; ++t) a[t] = token_acts<F>(x, t0 + t);
  switch (n_tok) {
    case 2: return gemv_tokens<F, 2>(w, r0, n_rows, a, y, ldy);
    case 3: return gemv_tokens<F, 3>(w, r0, n_rows, a, y, ldy);
    default: return gemv_tokens<F, 4>(w, r0, n_rows, a, y, ldy);
  }
}

// --- prefill (n_tok > 1 outside a decode step): lane layout ----------------------------

// v[k] holds, in 128-bit lane q, 16 bytes of row 4q + k; 4x4 transposes of dwords inside each
// 128-bit lane make dword k of lane q of out[g] dword g of row 4q + k, i.e. row r lands in lane r.
inline void transpose_lane_groups(const __m512i (&v)[4], __m512i (&out)[4]) {
  const __m512i t0 = _mm512_unpacklo_epi32(v[0], v[1]), t1 = _mm512_unpackhi_epi32(v[0], v[1]);
  const __m512i t2 = _mm512_unpacklo_epi32(v[2], v[3]), t3 = _mm512_unpackhi_epi32(v[2], v[3]);
  out[0] = _mm512_unpacklo_epi64(t0, t2);
  out[1] = _mm512_unpackhi_epi64(t0, t2);
  out[2] = _mm512_unpacklo_epi64(t1, t3);
  out[3] = _mm512_unpackhi_epi64(t1, t3);
}

// A block's 8 groups of 16 rows into a panel slot: lo[k] / hi[k] hold, in 128-bit lane q, the
// 16 even / odd weights of row 4q + k (out: the evens' groups 0-3, then the odds' 4-7).
inline void store_lane_groups(const __m512i (&lo)[4], const __m512i (&hi)[4], __m512i* out) {
  for (int h = 0; h < 2; ++h) {
    __m512i g[4];
    transpose_lane_groups(h == 0 ? lo : hi, g);
    for (int i = 0; i < 4; ++i) _mm512_store_si512(out + 4 * h + i, g[i]);
  }
}

// Rows [r0, r0 + n) (n <= 16; missing rows are zero) of w into panel: per block 8 zmm of
// weights then one zmm of row scales.
void decode_panel(const Weight& w, size_t r0, size_t n, __m512i* panel) {
  const size_t nb = w.cols / 32;
  const __m512i lut = code_lut();
  alignas(16) static const uint8_t zeros[16] = {};
  const uint8_t* row[kPanelRows];
  size_t step[kPanelRows];  // 16 bytes per block, 0 for a missing row (reads zeros forever)
  for (size_t i = 0; i < kPanelRows; ++i) {
    row[i] = i < n ? w.data + (r0 + i) * w.row_bytes : zeros;
    step[i] = i < n ? 16 : 0;
  }
  const __mmask16 valid = mask16(n);
  // 16 interleaved streams are more than the hardware prefetcher follows: fetch the rows
  // kPrefetchRows below, codes a line per row every 4 blocks, and their scales here (prefetches
  // past the tensor's end are dropped, never faulting).
  const size_t ahead = kPrefetchRows * w.row_bytes;
  for (size_t off = 0; off < n * nb; off += 64)
    _mm_prefetch(reinterpret_cast<const char*>(w.scales + (r0 + kPrefetchRows) * nb + off),
                 _MM_HINT_T0);
  for (size_t b = 0; b < nb; ++b) {
    if (b % 4 == 0)
      for (size_t i = 0; i < n; ++i)
        _mm_prefetch(reinterpret_cast<const char*>(row[i] + 16 * b) + ahead, _MM_HINT_T0);
    // a[k]: 128-bit lane q holds the 16 code bytes of row 4q + k (plain loads: masked ones
    // stall this strided walk over 16 rows).
    __m512i lo[4], hi[4];
    for (int k = 0; k < 4; ++k) {
      const auto ld = [&](int q) {
        return _mm_loadu_si128(
            reinterpret_cast<const __m128i*>(row[4 * q + k] + step[4 * q + k] * b));
      };
      const __m256i a01 = _mm256_inserti128_si256(_mm256_castsi128_si256(ld(0)), ld(1), 1);
      const __m256i a23 = _mm256_inserti128_si256(_mm256_castsi128_si256(ld(2)), ld(3), 1);
      const __m512i a = _mm512_inserti64x4(_mm512_castsi256_si512(a01), a23, 1);
      lo[k] = low_codes(a, lut);
      hi[k] = high_codes(a, lut);
    }
    store_lane_groups(lo, hi, panel + 9 * panel_slot(b, nb));
  }
  // Row scales per block: one dword gather per block (row i's scale b is at i * nb + b; the
  // low byte of each dword), widened to 16 floats (missing rows zero). The last 3 blocks go
  // byte by byte: a dword there could reach past the end of the tensor.
  const uint8_t* s0 = w.scales + r0 * nb;
  const __m512i offs =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(int(nb)));
  const size_t gathered = nb >= 3 ? nb - 3 : 0;
  for (size_t b = 0; b < nb; ++b) {
    __m128i bytes;
    if (b < gathered) {
      const __m512i d = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid, offs, s0 + b, 1);
      bytes = _mm512_cvtepi32_epi8(_mm512_and_si512(d, _mm512_set1_epi32(0xff)));
    } else {
      alignas(16) uint8_t sc[kPanelRows];
      for (size_t i = 0; i < kPanelRows; ++i) sc[i] = i < n ? s0[i * nb + b] : 0;
      bytes = _mm_load_si128(reinterpret_cast<const __m128i*>(sc));
    }
    panel[9 * panel_slot(b, nb) + 8] =
        _mm512_castps_si512(_mm512_maskz_mov_ps(valid, e8m0x16(bytes)));
  }
}

// decode_panel for a Q8_0 weight: the same panel layout, u = w + 128 and the row scales 2 e_b.
void decode_panel_q8_0(const Weight& w, size_t r0, size_t n, __m512i* panel) {
  constexpr size_t kBlock = Q8_0::kBlockBytes;
  const size_t nb = w.cols / 32;
  alignas(32) static const uint8_t zeros[kBlock] = {};
  const uint8_t* row[kPanelRows];
  size_t step[kPanelRows];  // bytes per block, 0 for a missing row (reads zeros forever)
  for (size_t i = 0; i < kPanelRows; ++i) {
    row[i] = i < n ? w.data + (r0 + i) * w.row_bytes : zeros;
    step[i] = i < n ? kBlock : 0;
  }
  const __mmask16 valid = mask16(n);
  const __m512i split =
      _mm512_broadcast_i32x4(_mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
  const __m512i evens = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
  const __m512i odds = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
  const __m512i bias = _mm512_set1_epi8(char(0x80));
  const size_t ahead = kPrefetchRows * w.row_bytes;
  const __m512i offs =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(int(w.row_bytes)));
  for (size_t b = 0; b < nb; ++b) {
    // A prefetch per row and block (34 bytes apart: every line of the rows below is asked for).
    for (size_t i = 0; i < n; ++i)
      _mm_prefetch(reinterpret_cast<const char*>(row[i] + kBlock * b) + ahead, _MM_HINT_T0);
    // lo[k] / hi[k]: 128-bit lane q holds the 16 even / odd weights of row 4q + k.
    __m512i lo[4], hi[4];
    for (int k = 0; k < 4; ++k) {
      const auto ld = [&](int q) {
        const int r = 4 * q + k;
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row[r] + step[r] * b + 2));
      };
      const __m512i a =
          _mm512_shuffle_epi8(_mm512_inserti64x4(_mm512_castsi256_si512(ld(0)), ld(1), 1), split);
      const __m512i c =
          _mm512_shuffle_epi8(_mm512_inserti64x4(_mm512_castsi256_si512(ld(2)), ld(3), 1), split);
      lo[k] = _mm512_xor_si512(_mm512_permutex2var_epi64(a, evens, c), bias);
      hi[k] = _mm512_xor_si512(_mm512_permutex2var_epi64(a, odds, c), bias);
    }
    __m512i* out = panel + 9 * panel_slot(b, nb);
    store_lane_groups(lo, hi, out);
    // The rows' f16 steps: the low half of the dword at each block's start (missing rows zero).
    const __m512i d = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid, offs,
                                                  w.data + r0 * w.row_bytes + kBlock * b, 1);
    const __m512 e = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d));
    out[8] = _mm512_castps_si512(_mm512_add_ps(e, e));
  }
}

// y[t * ldy + r] for r < n_rows (<= 16 P), t < TN: P consecutive panels (panel_stride zmm
// apart) times TN tokens. With P = 2 each broadcast activation feeds two vpdpbusd, which
// halves the loads per multiply-add (loads, not vpdpbusd, bound the one-panel tile).
// The row layout's order (gemv_rows): the blocks of chain m (b = m mod 16) in turn, one chain
// after another, then the chains added as that layout adds its lanes.
template <int P, int TN>
void panel_tile(const __m512i* panel, size_t panel_stride, size_t nb, const Q8Acts& x,
                const int32_t* offsets, size_t t0, size_t n_rows, float* y, size_t ldy) {
  constexpr size_t kChainLane[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
  const int8_t* xq[TN];
  const float* hd[TN];
  const int32_t* qi[TN];  // the format's offset terms (x.neg_q12 or x.neg_q128)
  for (int n = 0; n < TN; ++n) {
    xq[n] = x.q + (t0 + size_t(n)) * x.q_stride;
    hd[n] = x.half_d + (t0 + size_t(n)) * x.b_stride;
    qi[n] = offsets + (t0 + size_t(n)) * x.b_stride;
  }
  __m512 part[16][P][TN];
  for (size_t m = 0; m < 16; ++m) {
    __m512 acc[P][TN];
    for (int p = 0; p < P; ++p)
      for (int n = 0; n < TN; ++n) acc[p][n] = _mm512_setzero_ps();
    for (size_t b = m; b < nb; b += 16) {
      __m512i wv[P][8];
      __m512 ws[P];
      for (int p = 0; p < P; ++p) {
        const __m512i* wp = panel + size_t(p) * panel_stride + 9 * panel_slot(b, nb);
        for (int g = 0; g < 8; ++g) wv[p][g] = _mm512_load_si512(wp + g);
        ws[p] = _mm512_castsi512_ps(_mm512_load_si512(wp + 8));
      }
      for (int n = 0; n < TN; ++n) {
        // Quad order: groups 0-3 (evens) at +0, groups 4-7 (odds) at +64.
        const int32_t* xe = reinterpret_cast<const int32_t*>(xq[n] + quad_evens(b));
        const int32_t* xo = xe + 16;
        __m512i s[P];
        for (int p = 0; p < P; ++p)
          s[p] = _mm512_set1_epi32(qi[n][b]);  // the unsigned map's offset
        for (int g = 0; g < 4; ++g) {
          const __m512i xb = _mm512_set1_epi32(xe[g]);
          for (int p = 0; p < P; ++p) s[p] = _mm512_dpbusd_epi32(s[p], wv[p][g], xb);
        }
        for (int g = 0; g < 4; ++g) {
          const __m512i xb = _mm512_set1_epi32(xo[g]);
          for (int p = 0; p < P; ++p) s[p] = _mm512_dpbusd_epi32(s[p], wv[p][4 + g], xb);
        }
        const __m512 h = _mm512_set1_ps(hd[n][b]);
        for (int p = 0; p < P; ++p)
          acc[p][n] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[p]), _mm512_mul_ps(ws[p], h), acc[p][n]);
      }
    }
    for (int p = 0; p < P; ++p)
      for (int n = 0; n < TN; ++n) part[kChainLane[m]][p][n] = acc[p][n];
  }
  // The lanes' tree of _mm512_reduce_add_ps: lane L with L + 8, then + 4, + 2, + 1.
  for (size_t w = 8; w >= 1; w /= 2)
    for (size_t l = 0; l < w; ++l)
      for (int p = 0; p < P; ++p)
        for (int n = 0; n < TN; ++n)
          part[l][p][n] = _mm512_add_ps(part[l][p][n], part[l + w][p][n]);
  for (int p = 0; p < P; ++p) {
    const size_t rows = n_rows > 16 * size_t(p) ? n_rows - 16 * size_t(p) : 0;
    const __mmask16 m = mask16(rows);
    for (int n = 0; n < TN; ++n)
      _mm512_mask_storeu_ps(y + size_t(n) * ldy + 16 * size_t(p), m, part[0][p][n]);
  }
}

using TileFn = void (*)(const __m512i*, size_t, size_t, const Q8Acts&, const int32_t*, size_t,
                        size_t, float*, size_t);
constexpr size_t kTileTokens1 = 8, kTileTokens2 = 4;  // tokens per tile for 1 and 2 panels
const TileFn kTiles1[kTileTokens1] = {panel_tile<1, 1>, panel_tile<1, 2>, panel_tile<1, 3>,
                                      panel_tile<1, 4>, panel_tile<1, 5>, panel_tile<1, 6>,
                                      panel_tile<1, 7>, panel_tile<1, 8>};
const TileFn kTiles2[kTileTokens2] = {panel_tile<2, 1>, panel_tile<2, 2>, panel_tile<2, 3>,
                                      panel_tile<2, 4>};

using PanelDecode = void (*)(const Weight&, size_t, size_t, __m512i*);

// Rows [r0, r0 + n_rows) of w for tokens [t0, t0 + n_tok) through panels decoded by decode.
void matmul_panels(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                   size_t n_tok, float* y, size_t ldy, PanelDecode decode, const int32_t* offsets) {
  const size_t nb = w.cols / 32, stride = 9 * kChains * chain_len(nb);  // zmm per panel
  __m512i* panel = reinterpret_cast<__m512i*>(thread_scratch(2 * stride * 16, 2));
  for (size_t p = 0; p < n_rows; p += 2 * kPanelRows) {
    const size_t pr = n_rows - p < 2 * kPanelRows ? n_rows - p : 2 * kPanelRows;
    decode(w, r0 + p, pr < kPanelRows ? pr : kPanelRows, panel);
    if (pr > kPanelRows) decode(w, r0 + p + kPanelRows, pr - kPanelRows, panel + stride);
    const bool two = pr > kPanelRows;
    const size_t tile = two ? kTileTokens2 : kTileTokens1;
    for (size_t t = 0; t < n_tok; t += tile) {
      const size_t tn = n_tok - t < tile ? n_tok - t : tile;
      (two ? kTiles2 : kTiles1)[tn - 1](panel, stride, nb, x, offsets, t0 + t, pr, y + t * ldy + p,
                                        ldy);
    }
  }
}

// Rows [r0, r0 + n_rows) of w (format F, panels decoded by decode) for tokens [t0, t0 + n_tok).
template <typename F>
void matmul_q8(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0, size_t n_tok,
               float* y, size_t ldy, PanelDecode decode) {
  if (n_tok == 1) return gemv_token<F>(w, r0, n_rows, x, t0, y);
  matmul_panels(w, r0, n_rows, x, t0, n_tok, y, ldy, decode, F::offsets(x));
}

// A decode step's tokens: groups of up to 4 share each decoded group of weights; more tokens go
// through L2-sized blocks of rows.
template <typename F>
void gemv_step(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0, size_t n_tok,
               float* y, size_t ldy, size_t row_bytes) {
  if (n_tok <= kStepGroupTokens) return gemv_token_group<F>(w, r0, n_rows, x, t0, n_tok, y, ldy);
  const size_t groups = (n_tok + kStepGroupTokens - 1) / kStepGroupTokens;
  for_each_token_block(n_rows, row_bytes, groups, [&](size_t b, size_t n, size_t g) {
    const size_t t = g * kStepGroupTokens,
                 tn = n_tok - t < kStepGroupTokens ? n_tok - t : kStepGroupTokens;
    gemv_token_group<F>(w, r0 + b, n, x, t0 + t, tn, y + t * ldy + b, ldy);
  });
}

// --- Weight::mxfp4_lanes: the codes repacked at upload into tiles of 16 rows -------------
//
// A tile holds its blocks in the order the chains take them (formats.hpp), so a call walks its
// rows' tiles front to back: one stream per thread, which takes a prefetch into L1 far ahead
// without starving the demand loads as the row layout's 8 streams per core do (docs/
// performance.md, "One stream into L1"). The code vectors are the panels' groups as nibbles (low
// nibbles of vector g: group g, the evens; high: group 4 + g, the odds), and each token then gets
// panel_tile's instructions, hence the row layout's bits.
constexpr size_t kLanesAheadBytes = 8192;
constexpr size_t kLanesTileTokens = 8;

// The 8 groups of weights of the lanes block at `block`.
__attribute__((always_inline)) inline void lanes_groups(const uint8_t* block, __m512i (&wv)[8]) {
  const __m512i lut = code_lut();
  for (int g = 0; g < 4; ++g) {
    const __m512i c = _mm512_loadu_si512(block + 64 * g);
    wv[g] = low_codes(c, lut);
    wv[4 + g] = high_codes(c, lut);
  }
}

// y[t * ldy + r] for r < n_rows (<= 16), t < TN: the tile at codes / scales times TN tokens,
// decoded as it streams (panel_tile's arithmetic, one panel).
template <int TN>
void lanes_tile(const uint8_t* codes, const uint8_t* scales, size_t nb, const Q8Acts& x, size_t t0,
                size_t n_rows, float* y, size_t ldy) {
  constexpr size_t kChainLane[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
  const int8_t* xq[TN];
  const float* hd[TN];
  const int32_t* qi[TN];
  for (int n = 0; n < TN; ++n) {
    xq[n] = x.q + (t0 + size_t(n)) * x.q_stride;
    hd[n] = x.half_d + (t0 + size_t(n)) * x.b_stride;
    qi[n] = x.neg_q12 + (t0 + size_t(n)) * x.b_stride;
  }
  __m512 part[16][TN];
  for (size_t m = 0; m < 16; ++m) {
    __m512 acc[TN];
    for (int n = 0; n < TN; ++n) acc[n] = _mm512_setzero_ps();
    for (size_t b = m; b < nb; b += 16, codes += kMxfp4LanesBlockBytes, scales += 16) {
      for (size_t l = 0; l < kMxfp4LanesBlockBytes; l += 64)
        _mm_prefetch(reinterpret_cast<const char*>(codes) + kLanesAheadBytes + l, _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(scales) + kLanesAheadBytes / 16, _MM_HINT_T0);
      __m512i wv[8];
      lanes_groups(codes, wv);
      const __m512 ws = e8m0x16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales)));
      for (int n = 0; n < TN; ++n) {
        const int32_t* xe = reinterpret_cast<const int32_t*>(xq[n] + quad_evens(b));
        const int32_t* xo = xe + 16;
        // Two chains of integer sums (exact: their order changes nothing), half as deep.
        __m512i se = _mm512_set1_epi32(qi[n][b]), so = _mm512_setzero_si512();
        for (int g = 0; g < 4; ++g) {
          se = _mm512_dpbusd_epi32(se, wv[g], _mm512_set1_epi32(xe[g]));
          so = _mm512_dpbusd_epi32(so, wv[4 + g], _mm512_set1_epi32(xo[g]));
        }
        const __m512 h = _mm512_set1_ps(hd[n][b]);
        acc[n] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(se, so)), _mm512_mul_ps(ws, h),
                                 acc[n]);
      }
    }
    for (int n = 0; n < TN; ++n) part[kChainLane[m]][n] = acc[n];
  }
  // The lanes' tree of _mm512_reduce_add_ps, as panel_tile.
  for (size_t w = 8; w >= 1; w /= 2)
    for (size_t l = 0; l < w; ++l)
      for (int n = 0; n < TN; ++n) part[l][n] = _mm512_add_ps(part[l][n], part[l + w][n]);
  const __mmask16 rows = mask16(n_rows);
  for (int n = 0; n < TN; ++n) _mm512_mask_storeu_ps(y + size_t(n) * ldy, rows, part[0][n]);
}

using LanesTileFn = void (*)(const uint8_t*, const uint8_t*, size_t, const Q8Acts&, size_t, size_t,
                             float*, size_t);
const LanesTileFn kLanesTiles[kLanesTileTokens] = {lanes_tile<1>, lanes_tile<2>, lanes_tile<3>,
                                                   lanes_tile<4>, lanes_tile<5>, lanes_tile<6>,
                                                   lanes_tile<7>, lanes_tile<8>};

// decode_panel for a weight with mxfp4_lanes: the tile of rows [r0, r0 + 16) (r0 a multiple of
// 16; a panel of fewer rows is the tile's first, the kernels leave the others out).
void decode_panel_lanes(const Weight& w, size_t r0, size_t, __m512i* panel) {
  const size_t nb = w.cols / 32;
  const uint8_t* codes = w.data + r0 * w.row_bytes;
  const uint8_t* scales = w.scales + r0 * nb;
  for (size_t m = 0; m < 16; ++m)
    for (size_t b = m; b < nb; b += 16, codes += kMxfp4LanesBlockBytes, scales += 16) {
      for (size_t l = 0; l < kMxfp4LanesBlockBytes; l += 64)
        _mm_prefetch(reinterpret_cast<const char*>(codes) + kLanesAheadBytes + l, _MM_HINT_T0);
      __m512i wv[8];
      lanes_groups(codes, wv);
      __m512i* out = panel + 9 * panel_slot(b, nb);
      for (int g = 0; g < 8; ++g) _mm512_store_si512(out + g, wv[g]);
      out[8] =
          _mm512_castps_si512(e8m0x16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales))));
    }
}

}  // namespace

void repack_mxfp4_lanes_avx512vnni(const uint8_t* codes, const uint8_t* scales, size_t cols,
                                   size_t i0, size_t i1, uint8_t* dst_codes, uint8_t* dst_scales) {
  const size_t nb = cols / 32, row_bytes = 16 * nb;
  const __m512i offs =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(int(nb)));
  // The scales a dword gather at a time (the low byte of each), but the last 3 blocks byte by
  // byte: a dword there could reach past the end of the tensor's scales.
  const size_t gathered = nb >= 3 ? nb - 3 : 0;
  for (size_t i = i0; i < i1; ++i) {
    const uint8_t* tile = codes + 16 * i * row_bytes;
    const uint8_t* tile_scales = scales + 16 * i * nb;
    uint8_t* out = dst_codes + 16 * i * row_bytes;
    for (size_t b = 0; b < nb; ++b) {
      // a[k]: 128-bit lane q holds row 4q + k's block b, whose dwords the transpose spreads.
      __m512i a[4], g[4];
      for (size_t k = 0; k < 4; ++k) {
        const auto ld = [&](size_t q) {
          return _mm_loadu_si128(
              reinterpret_cast<const __m128i*>(tile + (4 * q + k) * row_bytes + 16 * b));
        };
        const __m256i a01 = _mm256_inserti128_si256(_mm256_castsi128_si256(ld(0)), ld(1), 1);
        const __m256i a23 = _mm256_inserti128_si256(_mm256_castsi128_si256(ld(2)), ld(3), 1);
        a[k] = _mm512_inserti64x4(_mm512_castsi256_si512(a01), a23, 1);
      }
      transpose_lane_groups(a, g);
      const size_t pos = mxfp4_lanes_pos(b, nb);
      uint8_t* dst = out + kMxfp4LanesBlockBytes * pos;
      for (int v = 0; v < 4; ++v) _mm512_storeu_si512(dst + 64 * v, g[v]);
      uint8_t* ds = dst_scales + 16 * i * nb + 16 * pos;
      if (b < gathered) {
        const __m512i d = _mm512_i32gather_epi32(offs, tile_scales + b, 1);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(ds), _mm512_cvtepi32_epi8(d));
      } else {
        for (size_t r = 0; r < 16; ++r) ds[r] = tile_scales[r * nb + b];
      }
    }
  }
}

void matmul_mxfp4_lanes_q8_avx512vnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x,
                                      size_t t0, size_t n_tok, float* y, size_t ldy) {
  // Prefill: each tile decoded once into a panel for all the tokens; a decode step's few:
  // straight from the tiles, up to 8 tokens per pass over a tile.
  if (n_tok > kGemvStepTokens)
    return matmul_panels(w, r0, n_rows, x, t0, n_tok, y, ldy, decode_panel_lanes, x.neg_q12);
  const size_t nb = w.cols / 32;
  for (size_t i = 0; i < n_rows; i += 16) {
    const size_t rows = n_rows - i < 16 ? n_rows - i : 16;
    const uint8_t* codes = w.data + (r0 + i) * w.row_bytes;
    const uint8_t* scales = w.scales + (r0 + i) * nb;
    for (size_t t = 0; t < n_tok; t += kLanesTileTokens) {
      const size_t tn = n_tok - t < kLanesTileTokens ? n_tok - t : kLanesTileTokens;
      kLanesTiles[tn - 1](codes, scales, nb, x, t0 + t, rows, y + t * ldy + i, ldy);
    }
  }
}

void matmul_mxfp4_q8_avx512vnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x,
                                size_t t0, size_t n_tok, float* y, size_t ldy) {
  matmul_q8<Mxfp4>(w, r0, n_rows, x, t0, n_tok, y, ldy, decode_panel);
}

void gemv_mxfp4_q8_avx512vnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                              size_t n_tok, float* y, size_t ldy) {
  gemv_step<Mxfp4>(w, r0, n_rows, x, t0, n_tok, y, ldy, w.row_bytes + w.cols / 32);
}

void matmul_q8_0_q8_avx512vnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x,
                               size_t t0, size_t n_tok, float* y, size_t ldy) {
  matmul_q8<Q8_0>(w, r0, n_rows, x, t0, n_tok, y, ldy, decode_panel_q8_0);
}

void gemv_q8_0_q8_avx512vnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                             size_t n_tok, float* y, size_t ldy) {
  gemv_step<Q8_0>(w, r0, n_rows, x, t0, n_tok, y, ldy, w.row_bytes);
}

void quantize_q8_avx512vnni(const float* x, size_t ldx, size_t n_tok, Q8Acts& out) {
  quantize_q8(x, ldx, n_tok, out);
}

}  // namespace gptoss::cpu
