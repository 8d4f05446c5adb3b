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
// one load and one store per block beside the 32 vpmaddwd of a token. One token walks two tiles
// at once, one from each half of the call's rows: two streams per thread read a Zen 3's memory
// faster than one (the bf16 GEMVs' lesson; a tile at a time from alternating places does not).
// Measurements: docs/performance.md, "The Q8_0 matrices in lanes on AVX2" and "Decode on the
// Zen 3: not the arithmetic, not the pool".
#include <immintrin.h>

#include <algorithm>

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

// The 16 chains of each half added as a tree into the tile's n_rows (<= 16) results at y.
inline void store_tile(__m256 (&acc)[kChains][2], size_t n_rows, float* y) {
  for (size_t w = 8; w >= 1; w /= 2)
    for (size_t l = 0; l < w; ++l)
      for (size_t h = 0; h < 2; ++h) acc[l][h] = _mm256_add_ps(acc[l][h], acc[l + w][h]);
  if (n_rows == kTileRows) {
    _mm256_storeu_ps(y, acc[0][0]);
    _mm256_storeu_ps(y + 8, acc[0][1]);
    return;
  }
  alignas(32) float row[kTileRows];
  _mm256_store_ps(row, acc[0][0]);
  _mm256_store_ps(row + 8, acc[0][1]);
  for (size_t r = 0; r < n_rows; ++r) y[r] = row[r];
}

// One token (t0) times NT tiles at once, block b of each in turn, tile k's n_rows[k] rows into
// y[k]: NT streams. Each half's block sum is split into two int32 partials (exact in any order)
// to keep two vpaddd chains per half in flight.
template <int NT>
void one_token_tiles(const uint8_t* const* tiles, size_t nb, const Q16Acts& x, size_t t0,
                     const size_t* n_rows, float* const* y) {
  const int32_t* xp = reinterpret_cast<const int32_t*>(x.q + t0 * x.q_stride);
  const float* xd = x.d + t0 * x.b_stride;
  __m256 acc[NT][kChains][2];
  for (auto& tile : acc)
    for (auto& chain : tile)
      for (auto& a : chain) a = _mm256_setzero_ps();
  for (size_t b = 0; b < nb; ++b)
    for (int k = 0; k < NT; ++k) {
      const uint8_t* block = tiles[k] + kBlockBytes * b;
      for (size_t off = 0; off < kBlockBytes; off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(block) + off + kAheadBytes, _MM_HINT_T0);
      __m256i s[2][2];
      for (auto& half : s)
        for (auto& part : half) part = _mm256_setzero_si256();
#pragma GCC unroll 16
      for (size_t i = 0; i < 16; ++i) {
        const __m256i w0 = pairs(block, i, 0), w1 = pairs(block, i, 1);
        const __m256i xb = _mm256_set1_epi32(xp[16 * b + i]);
        s[0][i % 2] = _mm256_add_epi32(s[0][i % 2], _mm256_madd_epi16(w0, xb));
        s[1][i % 2] = _mm256_add_epi32(s[1][i % 2], _mm256_madd_epi16(w1, xb));
      }
      __m256(&chain)[2] = acc[k][b % kChains];
      for (size_t h = 0; h < 2; ++h)
        chain[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(s[h][0], s[h][1])),
                                   _mm256_mul_ps(steps(block, h), _mm256_set1_ps(xd[b])), chain[h]);
    }
  for (int k = 0; k < NT; ++k) store_tile(acc[k], n_rows[k], y[k]);
}

// Tokens t0 .. t0 + TN - 1 (TN >= 2) times the n_rows (<= 16) rows of one tile into
// y[n * ldy + r].
template <int TN>
void tile_tokens(const uint8_t* tile, size_t nb, const Q16Acts& x, size_t t0, size_t n_rows,
                 float* y, size_t ldy, bool prefetch) {
  static_assert(TN >= 2, "one token: one_token_tiles");
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
    // Pair i of the block into the sums, 4 pairs unrolled, which keeps GCC from hoisting loads
    // into spills.
    __m256i s[2][TN];
    for (auto& half : s) {
      for (auto& token : half) token = _mm256_setzero_si256();
    }
#pragma GCC unroll 4
    for (size_t i = 0; i < 16; ++i) {
      const __m256i w0 = pairs(block, i, 0), w1 = pairs(block, i, 1);
      for (int n = 0; n < TN; ++n) {
        const __m256i xb = _mm256_set1_epi32(xp[n][16 * b + i]);
        s[0][n] = _mm256_add_epi32(s[0][n], _mm256_madd_epi16(w0, xb));
        s[1][n] = _mm256_add_epi32(s[1][n], _mm256_madd_epi16(w1, xb));
      }
    }
    __m256(&chain)[2][TN] = acc[b % kChains];
    for (size_t h = 0; h < 2; ++h) {
      const __m256 e = steps(block, h);
      for (int n = 0; n < TN; ++n)
        chain[h][n] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[h][n]),
                                      _mm256_mul_ps(e, _mm256_set1_ps(xd[n][b])), chain[h][n]);
    }
  }
  for (int n = 0; n < TN; ++n) {
    __m256 token[kChains][2];
    for (size_t c = 0; c < kChains; ++c)
      for (size_t h = 0; h < 2; ++h) token[c][h] = acc[c][h][n];
    store_tile(token, n_rows, y + size_t(n) * ldy);
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
  const size_t nb = w.cols / 32, tile_bytes = kBlockBytes * nb;
  const size_t n_tiles = (n_rows + kTileRows - 1) / kTileRows;
  const auto tile_at = [&](size_t i) { return w.data + (r0 / kTileRows + i) * tile_bytes; };
  const auto rows_at = [&](size_t i) { return std::min(kTileRows, n_rows - i * kTileRows); };
  if (n_tok == 1) {  // tile j with tile half + j: two streams (the first run takes an odd one)
    const size_t half = (n_tiles + 1) / 2;
    for (size_t j = 0; j < half; ++j) {
      const uint8_t* tiles[2] = {tile_at(j), nullptr};
      size_t rows[2] = {rows_at(j), 0};
      float* ys[2] = {y + j * kTileRows, nullptr};
      if (half + j < n_tiles) {
        tiles[1] = tile_at(half + j);
        rows[1] = rows_at(half + j);
        ys[1] = y + (half + j) * kTileRows;
        one_token_tiles<2>(tiles, nb, x, t0, rows, ys);
      } else {
        one_token_tiles<1>(tiles, nb, x, t0, rows, ys);
      }
    }
    return;
  }
  using TileFn =
      void (*)(const uint8_t*, size_t, const Q16Acts&, size_t, size_t, float*, size_t, bool);
  static constexpr TileFn kTiles[kGroupTokens] = {nullptr, tile_tokens<2>, tile_tokens<3>,
                                                  tile_tokens<4>};
  for (size_t i = 0; i < n_tiles; ++i) {
    const uint8_t* tile = tile_at(i);
    size_t rows = rows_at(i);
    for (size_t t = 0; t < n_tok; t += kGroupTokens) {
      const size_t tn = n_tok - t < kGroupTokens ? n_tok - t : kGroupTokens;
      float* yt = y + t * ldy + i * kTileRows;
      if (tn == 1)  // the tile is in L2 from the tokens before
        one_token_tiles<1>(&tile, nb, x, t0 + t, &rows, &yt);
      else kTiles[tn - 1](tile, nb, x, t0 + t, rows, yt, ldy, t == 0);
    }
  }
}

}  // namespace gptoss::cpu
