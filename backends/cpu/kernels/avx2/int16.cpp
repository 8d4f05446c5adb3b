// The fast mode's int16 path of the avx2 level (also in the avx512 table): Q8_0 weights
// repacked at upload (Weight::q8_0_lanes) times int16 activations (Q16Acts), for the attention
// projections and the unembedding of a GGUF with Q8_0 dense tensors. Without VNNI, vpmovsxbw
// widens 8 rows' pair of weights to int16 and vpmaddwd multiplies them with the token's pair
// broadcast: 16 multiply-adds, a vpaddd into the block's int32 sum beside it; an fp32 FMA does
// 8 and needs the weights converted first. Built with -mavx2 -mfma -mf16c.
//
// The order of a row's sum is avx512vnni's (avx512vnni/int16.cpp), so both levels give the same
// bits: per block b the exact int32 sum S_b = sum(w q), converted to float, and its scale
// c_b = e_b * d_b; 16 chains, chain m taking fma(float(S_b), c_b, .) for the blocks
// b = m (mod 16) in increasing order; then the chains added as a tree, chain L with chain L + 8,
// then + 4, + 2, + 1.
//
// A tile's block (kQ8_0LanesBlockBytes) is 16 vectors of 32 int8, vector i holding elements 2i
// and 2i + 1 of each of the 16 rows, then the 16 rows' f16 steps: a ymm takes half a vector,
// 8 rows, widened. A call walks a tile front to back, both halves at once, for up to
// kGroupTokens tokens, each token's broadcast pair shared by the halves. The 16 chains of each
// (half, token) are too many for the 16 ymm registers: they live in an array on the stack,
// one load and one store per block beside the 32 vpmaddwd of a token. Measurements:
// docs/performance.md, "The Q8_0 matrices in lanes on AVX2".
#include <immintrin.h>

#include "avx2/block_amax.hpp"
#include "avx2/int16.hpp"
#include "cpu_backend.hpp"
#include "formats.hpp"

namespace gptoss::cpu {
namespace {

constexpr size_t kChains = 16;
constexpr size_t kTileRows = 16;
constexpr size_t kBlockBytes = kQ8_0LanesBlockBytes;
// Tokens per walk over a tile: 2 halves x 4 tokens of int32 sums, 2 weight vectors and a
// broadcast pair fill the registers. More tokens walk the tile again, from L2.
constexpr size_t kGroupTokens = 4;
// How far ahead of its block the first walk over a tile prefetches, into L1 (the avx512vnni
// one-token GEMV's distance: one stream per thread).
constexpr size_t kAheadBytes = 8192;

// Pair vector i of a block, half h (rows 8h .. 8h + 7), widened to int16.
inline __m256i pairs(const uint8_t* block, size_t i, size_t h) {
  return _mm256_cvtepi8_epi16(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 32 * i + 16 * h)));
}
// The f16 steps of half h's rows as floats.
inline __m256 steps(const uint8_t* block, size_t h) {
  return _mm256_cvtph_ps(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + kQ8_0LanesStepsAt + 16 * h)));
}

// Tokens t0 .. t0 + TN - 1 times the n_rows (<= 16) rows of one tile into y[n * ldy + r].
// The one-token walk splits each half's block sum into two int32 partials (exact in any order)
// to keep two vpaddd chains per half in flight.
template <int TN>
void tile_tokens(const uint8_t* tile, size_t nb, const Q16Acts& x, size_t t0, size_t n_rows,
                 float* y, size_t ldy, bool prefetch) {
  constexpr int kParts = TN == 1 ? 2 : 1;
  const int32_t* xp[TN];  // a token's activations as pairs
  const float* xd[TN];
  for (int n = 0; n < TN; ++n) {
    xp[n] = reinterpret_cast<const int32_t*>(x.q + (t0 + size_t(n)) * x.q_stride);
    xd[n] = x.d + (t0 + size_t(n)) * x.b_stride;
  }
  __m256 acc[kChains][2][TN];
  for (auto& chain : acc)
    for (auto& half : chain)
      for (auto& a : half) a = _mm256_setzero_ps();
  for (size_t b = 0; b < nb; ++b) {
    const uint8_t* block = tile + kBlockBytes * b;
    if (prefetch)
      for (size_t off = 0; off < kBlockBytes; off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(block) + off + kAheadBytes, _MM_HINT_T0);
    __m256i s[2][TN][kParts];
    for (auto& half : s)
      for (auto& token : half)
        for (auto& part : token) part = _mm256_setzero_si256();
    // Pair i of the block into the sums. One token unrolls the whole block (its sums fit the
    // registers); several unroll 4 pairs, which keeps GCC from hoisting loads into spills.
    const auto add_pair = [&](size_t i) __attribute__((always_inline)) {
      const __m256i w0 = pairs(block, i, 0), w1 = pairs(block, i, 1);
      for (int n = 0; n < TN; ++n) {
        const __m256i xb = _mm256_set1_epi32(xp[n][16 * b + i]);
        s[0][n][i % kParts] = _mm256_add_epi32(s[0][n][i % kParts], _mm256_madd_epi16(w0, xb));
        s[1][n][i % kParts] = _mm256_add_epi32(s[1][n][i % kParts], _mm256_madd_epi16(w1, xb));
      }
    };
    if constexpr (TN == 1) {
#pragma GCC unroll 16
      for (size_t i = 0; i < 16; ++i) add_pair(i);
    } else {
#pragma GCC unroll 4
      for (size_t i = 0; i < 16; ++i) add_pair(i);
    }
    __m256(&chain)[2][TN] = acc[b % kChains];
    for (size_t h = 0; h < 2; ++h) {
      const __m256 e = steps(block, h);
      for (int n = 0; n < TN; ++n) {
        __m256i sum = s[h][n][0];
        if constexpr (kParts == 2) sum = _mm256_add_epi32(sum, s[h][n][1]);
        chain[h][n] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum),
                                      _mm256_mul_ps(e, _mm256_set1_ps(xd[n][b])), chain[h][n]);
      }
    }
  }
  for (size_t w = 8; w >= 1; w /= 2)
    for (size_t l = 0; l < w; ++l)
      for (size_t h = 0; h < 2; ++h)
        for (int n = 0; n < TN; ++n) acc[l][h][n] = _mm256_add_ps(acc[l][h][n], acc[l + w][h][n]);
  for (int n = 0; n < TN; ++n) {
    float* yn = y + size_t(n) * ldy;
    if (n_rows == kTileRows) {
      _mm256_storeu_ps(yn, acc[0][0][n]);
      _mm256_storeu_ps(yn + 8, acc[0][1][n]);
    } else {
      alignas(32) float row[kTileRows];
      _mm256_store_ps(row, acc[0][0][n]);
      _mm256_store_ps(row + 8, acc[0][1][n]);
      for (size_t r = 0; r < n_rows; ++r) yn[r] = row[r];
    }
  }
}

}  // namespace

void quantize_q16_avx2(const float* x, size_t ldx, size_t n_tok, Q16Acts& out) {
  const size_t nb = out.cols / 32;
  for (size_t t = 0; t < n_tok; ++t) {
    const float* xr = x + t * ldx;
    int16_t* q = out.q + t * out.q_stride;
    float* d = out.d + t * out.b_stride;
    for (size_t b = 0; b < nb; ++b) {
      __m256 v[4];
      const float step = avx2::block_amax(xr + 32 * b, v) / 32767.0f;
      const float inv = step != 0.0f ? 1.0f / step : 0.0f;
      // Round to nearest even (MXCSR default), like nearbyint; |x / step| <= 32767 after it,
      // so the saturating pack changes nothing. vpackssdw packs per 128-bit lane: vpermq puts
      // the block's quarters back in order.
      __m256i qv[4];
      for (int i = 0; i < 4; ++i)
        qv[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], _mm256_set1_ps(inv)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b),
                          _mm256_permute4x64_epi64(_mm256_packs_epi32(qv[0], qv[1]), 0xd8));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b + 16),
                          _mm256_permute4x64_epi64(_mm256_packs_epi32(qv[2], qv[3]), 0xd8));
      d[b] = step;
    }
    for (size_t b = nb; b < out.b_stride; ++b) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b), _mm256_setzero_si256());
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b + 16), _mm256_setzero_si256());
      d[b] = 0.0f;
    }
  }
}

void matmul_q8_0_lanes_q16_avx2(const Weight& w, size_t r0, size_t n_rows, const Q16Acts& x,
                                size_t t0, size_t n_tok, float* y, size_t ldy) {
  using TileFn =
      void (*)(const uint8_t*, size_t, const Q16Acts&, size_t, size_t, float*, size_t, bool);
  static constexpr TileFn kTiles[kGroupTokens] = {tile_tokens<1>, tile_tokens<2>, tile_tokens<3>,
                                                  tile_tokens<4>};
  const size_t nb = w.cols / 32, tile_bytes = kBlockBytes * nb;
  for (size_t p = 0; p < n_rows; p += kTileRows) {
    const uint8_t* tile = w.data + (r0 + p) / kTileRows * tile_bytes;
    const size_t rows = n_rows - p < kTileRows ? n_rows - p : kTileRows;
    for (size_t t = 0; t < n_tok; t += kGroupTokens) {
      const size_t tn = n_tok - t < kGroupTokens ? n_tok - t : kGroupTokens;
      kTiles[tn - 1](tile, nb, x, t0 + t, rows, y + t * ldy + p, ldy, t == 0);
    }
  }
}

}  // namespace gptoss::cpu
