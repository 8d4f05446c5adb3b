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
#include <immintrin.h>

#include "cpu_backend.hpp"
#include "kernels.hpp"
#include "q8_quad.hpp"
#include "row_streams.hpp"

namespace gptoss::cpu {
namespace {

constexpr size_t kPanelRows = 8;
constexpr size_t kPrefetchBytes = 8192;  // the best single-stream distance (docs/performance.md)

// nibble code -> 2v + 12: 0..7 -> 12 + {0,1,2,3,4,6,8,12}, 8..15 negated.
inline __m256i code_lut() {
  return _mm256_broadcastsi128_si256(
      _mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
}

// The low 8 E8M0 bytes -> 2^(e - 127) as floats, exactly (e = 0 is the subnormal 2^-127).
inline __m256 e8m0x8(__m128i bytes) {
  const __m256i e = _mm256_cvtepu8_epi32(bytes);
  const __m256i zero = _mm256_cmpeq_epi32(e, _mm256_setzero_si256());
  return _mm256_castsi256_ps(
      _mm256_blendv_epi8(_mm256_slli_epi32(e, 23), _mm256_set1_epi32(0x00400000), zero));
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

// One token's activations (quad order, see Q8Acts in kernels.hpp).
struct TokenActs {
  const int8_t* xq;
  const float* hd;
  const float* q12;
};

inline TokenActs token_acts(const Q8Acts& x, size_t t) {
  return {x.q + t * x.q_stride, x.half_d + t * x.b_stride, x.q12f + t * x.b_stride};
}

// R rows of a decode GEMV for T tokens: per row and token an accumulator, a correction and the
// current chunk's 8 block scales.
template <int R, int T>
struct GemvRows {
  const uint8_t* codes[R];
  const uint8_t* scales[R];
  __m256 acc[R][T], corr[R][T], cs[R][T];
};

// Blocks 2k, 2k + 1 of every row (codes at byte 32k) against each token's activations (at xo:
// evens, +64 odds), scaled by lanes 2j, 2j + 1 of cs (j = k % 4, a constant in full chunks).
// The codes are loaded and mapped once; each token then takes exactly the instructions of a
// token alone. A last odd block (whole false) loads only its 16 bytes (the rest could be past
// the tensor): the missing block's codes become 12, against zero activations and a zero scale.
template <class Dot, int R, int T>
__attribute__((always_inline)) inline void gemv_pair(GemvRows<R, T>& st, size_t k, int j, size_t xo,
                                                     bool whole, const TokenActs* x) {
  const __m256i lut = code_lut(), low4 = _mm256_set1_epi8(0x0f);
  const __m256i idx = _mm256_setr_epi32(2 * j, 2 * j, 2 * j, 2 * j, 2 * j + 1, 2 * j + 1, 2 * j + 1, 2 * j + 1);
  __m256i x_even[T], x_odd[T];
  for (int t = 0; t < T; ++t) {
    x_even[t] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t].xq + xo));
    x_odd[t] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t].xq + xo + 64));
  }
  for (int r = 0; r < R; ++r) {
    const uint8_t* src = st.codes[r] + 32 * k;
    if (j % 2 == 0) _mm_prefetch(reinterpret_cast<const char*>(src) + kPrefetchBytes, _MM_HINT_T0);
    const __m256i c = whole ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src))
                            : _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
    const __m256i lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(c, low4));
    const __m256i hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(c, 4), low4));
    for (int t = 0; t < T; ++t) {
      const __m256i s = Dot::dot2(_mm256_setzero_si256(), lo, x_even[t], hi, x_odd[t]);
      st.acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_permutevar8x32_ps(st.cs[r][t], idx), st.acc[r][t]);
    }
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
    for (int t = 0; t < T; ++t) st.acc[r][t] = st.corr[r][t] = _mm256_setzero_ps();
  }
  // Chunks of 8 blocks (4 pairs, 128 code bytes per row), each with its 8 block scales.
  for (size_t b0 = 0; b0 < nb; b0 += 8) {
    __m256 h[T], c12[T];
    for (int t = 0; t < T; ++t) h[t] = _mm256_loadu_ps(x[t].hd + b0), c12[t] = _mm256_loadu_ps(x[t].q12 + b0);
    const bool full = nb - b0 >= 8;
    for (int r = 0; r < R; ++r) {  // s_b * d_b / 2
      _mm_prefetch(reinterpret_cast<const char*>(st.scales[r] + b0) + kPrefetchBytes / 16, _MM_HINT_T0);
      __m128i sb;
      if (full) {
        sb = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(st.scales[r] + b0));
      } else {  // missing blocks get scale byte 0; their half_d is 0 (padding)
        alignas(16) uint8_t tail[16] = {};
        for (size_t i = 0; i < nb - b0; ++i) tail[i] = st.scales[r][b0 + i];
        sb = _mm_load_si128(reinterpret_cast<const __m128i*>(tail));
      }
      const __m256 e = e8m0x8(sb);
      for (int t = 0; t < T; ++t) {
        st.cs[r][t] = _mm256_mul_ps(e, h[t]);
        st.corr[r][t] = _mm256_fmadd_ps(st.cs[r][t], c12[t], st.corr[r][t]);
      }
    }
    const size_t k0 = b0 / 2, xo = 128 * (b0 / 4);  // quad order: pairs at +0, +32 of each group
    if (full) {
      gemv_pair<Dot, R, T>(st, k0 + 0, 0, xo, true, x);
      gemv_pair<Dot, R, T>(st, k0 + 1, 1, xo + 32, true, x);
      gemv_pair<Dot, R, T>(st, k0 + 2, 2, xo + 128, true, x);
      gemv_pair<Dot, R, T>(st, k0 + 3, 3, xo + 160, true, x);
    } else {
      for (size_t k = k0; 2 * k < nb; ++k)
        gemv_pair<Dot, R, T>(st, k, int(k % 4), 128 * (k / 2) + 32 * (k % 2), 2 * k + 2 <= nb, x);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) y[size_t(t) * ldy + size_t(r)] = hsum8(st.acc[r][t]) - hsum8(st.corr[r][t]);
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
  for_each_token_block(n_rows, w.row_bytes + w.cols / 32, groups, [&](size_t b, size_t n, size_t g) {
    const size_t t = g * kStepGroupTokens, tn = n_tok - t < kStepGroupTokens ? n_tok - t : kStepGroupTokens;
    gemv_token_group<Dot>(w, r0 + b, n, x, t0 + t, tn, y + t * ldy + b, ldy);
  });
}

// --- n_tok > 1: lane layout ---------------------------------------------------------------

// Rows [r0, r0 + n) (n <= 8; missing rows have scale 0) of w into panel: per block 8 ymm of
// weights then one ymm of row scales.
void decode_panel(const Weight& w, size_t r0, size_t n, __m256i* panel) {
  const size_t nb = w.cols / 32;
  const __m256i lut = code_lut(), low4 = _mm256_set1_epi8(0x0f);
  alignas(16) static const uint8_t zeros[16] = {};
  const uint8_t* row[kPanelRows];
  size_t step[kPanelRows];  // 16 bytes per block, 0 for a missing row (reads zeros forever)
  for (size_t i = 0; i < kPanelRows; ++i) {
    row[i] = i < n ? w.data + (r0 + i) * w.row_bytes : zeros;
    step[i] = i < n ? 16 : 0;
  }
  const __m256 valid = _mm256_castsi256_ps(lanes_below(n));
  const uint8_t* s0 = w.scales + r0 * nb;
  for (size_t b = 0; b < nb; ++b) {
    if (b % 4 == 0)
      for (size_t i = 0; i < n; ++i)
        _mm_prefetch(reinterpret_cast<const char*>(row[i] + 16 * b) + kPrefetchBytes, _MM_HINT_T0);
    // a[k]: 128-bit lane q holds the 16 code bytes of row 4q + k.
    __m256i lo[4], hi[4];
    for (size_t k = 0; k < 4; ++k) {
      const __m128i r_lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[k] + step[k] * b));
      const __m128i r_hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[4 + k] + step[4 + k] * b));
      const __m256i a = _mm256_inserti128_si256(_mm256_castsi128_si256(r_lo), r_hi, 1);
      lo[k] = _mm256_shuffle_epi8(lut, _mm256_and_si256(a, low4));
      hi[k] = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(a, 4), low4));
    }
    // 4x4 transposes of dwords inside each 128-bit lane: dword k of lane q of out[g] is group g
    // of row 4q + k, i.e. row r lands in lane r.
    __m256i* out = panel + 9 * b;
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
    const __m256 ws = _mm256_and_ps(valid, e8m0x8(_mm_load_si128(reinterpret_cast<const __m128i*>(sc))));
    _mm256_store_si256(out + 8, _mm256_castps_si256(ws));
  }
}

inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// y[t * ldy + r] for r < n_rows (<= 8), t < TN: one panel times TN tokens.
template <class Dot, int TN>
void panel_tile(const __m256i* panel, size_t nb, const Q8Acts& x, size_t t0, size_t n_rows,
                float* y, size_t ldy) {
  __m256 acc[TN];
  const int8_t* xq[TN];
  const float* hd[TN];
  const int32_t* qi[TN];  // x.neg_q12
  for (int n = 0; n < TN; ++n) {
    acc[n] = _mm256_setzero_ps();
    xq[n] = x.q + (t0 + size_t(n)) * x.q_stride;
    hd[n] = x.half_d + (t0 + size_t(n)) * x.b_stride;
    qi[n] = x.neg_q12 + (t0 + size_t(n)) * x.b_stride;
  }
  for (size_t b = 0; b < nb; ++b) {
    const __m256i* wp = panel + 9 * b;
    __m256i wv[8];
    for (int g = 0; g < 8; ++g) wv[g] = _mm256_load_si256(wp + g);
    const __m256 ws = _mm256_castsi256_ps(_mm256_load_si256(wp + 8));
    for (int n = 0; n < TN; ++n) {
      // Quad order: groups 0-3 (evens) at +0, groups 4-7 (odds) at +64.
      const int8_t* xe = xq[n] + quad_evens(b);
      __m256i s = _mm256_set1_epi32(qi[n][b]);  // -12 sum(q): the code offset
      s = Dot::dot4(s, wv[0], bcast4(xe), wv[1], bcast4(xe + 4), wv[2], bcast4(xe + 8), wv[3],
                    bcast4(xe + 12));
      s = Dot::dot4(s, wv[4], bcast4(xe + 64), wv[5], bcast4(xe + 68), wv[6], bcast4(xe + 72),
                    wv[7], bcast4(xe + 76));
      acc[n] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(ws, _mm256_set1_ps(hd[n][b])), acc[n]);
    }
  }
  const __m256i m = lanes_below(n_rows);
  for (int n = 0; n < TN; ++n) {
    float* dst = y + size_t(n) * ldy;
    if (n_rows >= kPanelRows) _mm256_storeu_ps(dst, acc[n]);
    else _mm256_maskstore_ps(dst, m, acc[n]);
  }
}

constexpr size_t kTileTokens = 4;

template <class Dot>
void matmul_q8(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
               size_t n_tok, float* y, size_t ldy) {
  const size_t nb = w.cols / 32, ymm_per_panel = 9 * nb;
  if (n_tok == 1) return gemv_token_group<Dot>(w, r0, n_rows, x, t0, 1, y, ldy);
  __m256i* panel = reinterpret_cast<__m256i*>(thread_scratch(ymm_per_panel * 8, 2));
  for (size_t p = 0; p < n_rows; p += kPanelRows) {
    const size_t pr = n_rows - p < kPanelRows ? n_rows - p : kPanelRows;
    decode_panel(w, r0 + p, pr, panel);
    for (size_t t = 0; t < n_tok; t += kTileTokens) {
      const size_t tn = n_tok - t < kTileTokens ? n_tok - t : kTileTokens;
      float* yt = y + t * ldy + p;
      switch (tn) {
        case 1: panel_tile<Dot, 1>(panel, nb, x, t0 + t, pr, yt, ldy); break;
        case 2: panel_tile<Dot, 2>(panel, nb, x, t0 + t, pr, yt, ldy); break;
        case 3: panel_tile<Dot, 3>(panel, nb, x, t0 + t, pr, yt, ldy); break;
        default: panel_tile<Dot, 4>(panel, nb, x, t0 + t, pr, yt, ldy); break;
      }
    }
  }
}

}  // namespace
}  // namespace gptoss::cpu
