// The fast-mode kernels of the avx2 level (built with -mavx2 -mfma -mf16c): quantize_q8, and
// the MXFP4 x int8 matmul and a decode step's several-token GEMV with vpmaddubsw + vpmaddwd
// (Haswell to Comet Lake, Zen 2/3; also in the avx512 table). The scalar definitions are
// quantize_q8_reference and matmul_mxfp4_q8_reference (scalar/matmul.cpp); the kernels are in
// int8_body.hpp.
#include "avx2/int8.hpp"
#include "avx2/block_amax.hpp"
#include "avx2/int8_body.hpp"

namespace gptoss::cpu {
namespace {

// Products of u8 and s8 bytes summed pairwise to int16 (no saturation: see the body header),
// the int16 sums of up to 4 products added, then pairs of int16 summed to int32.
struct MaddubsDot {
  static __m256i dot2(__m256i acc, __m256i a0, __m256i b0, __m256i a1, __m256i b1) {
    const __m256i s16 = _mm256_add_epi16(_mm256_maddubs_epi16(a0, b0), _mm256_maddubs_epi16(a1, b1));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(s16, _mm256_set1_epi16(1)));
  }
  static __m256i dot4(__m256i acc, __m256i a0, __m256i b0, __m256i a1, __m256i b1, __m256i a2,
                      __m256i b2, __m256i a3, __m256i b3) {
    const __m256i s01 = _mm256_add_epi16(_mm256_maddubs_epi16(a0, b0), _mm256_maddubs_epi16(a1, b1));
    const __m256i s23 = _mm256_add_epi16(_mm256_maddubs_epi16(a2, b2), _mm256_maddubs_epi16(a3, b3));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_add_epi16(s01, s23), _mm256_set1_epi16(1)));
  }
};

inline int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x55));
  return _mm_cvtsi128_si32(s);
}

}  // namespace

void quantize_q8_avx2(const float* x, size_t ldx, size_t n_tok, Q8Acts& out) {
  const size_t nb = out.cols / 32;
  // After the two packs, dword i of the 32 bytes holds natural elements of dword perm[i].
  const __m256i unpack = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const __m256i split = _mm256_broadcastsi128_si256(
      _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
  for (size_t t = 0; t < n_tok; ++t) {
    const float* xr = x + t * ldx;
    int8_t* q = out.q + t * out.q_stride;
    for (size_t b = 0; b < nb; ++b) {
      __m256 v[4];
      const float d = avx2::block_amax(xr + 32 * b, v) / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      __m256i qv[4];  // round to nearest even (MXCSR default), like nearbyint
      for (int i = 0; i < 4; ++i) qv[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], _mm256_set1_ps(id)));
      // Saturating packs to int8 (|q| <= 127 already), back to natural order, then per 128-bit
      // lane evens before odds, and the halves regrouped: evens of the block, then odds.
      __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(qv[0], qv[1]), _mm256_packs_epi32(qv[2], qv[3]));
      p = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(p, unpack), split);
      p = _mm256_permute4x64_epi64(p, 0xd8);
      int8_t* dst = q + quad_evens(b);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_castsi256_si128(p));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 64), _mm256_extracti128_si256(p, 1));
      const int32_t sum = hsum_epi32(_mm256_add_epi32(_mm256_add_epi32(qv[0], qv[1]), _mm256_add_epi32(qv[2], qv[3])));
      store_block_terms(out, t, b, d, sum);
    }
    zero_row_padding(out, t, nb);
  }
}

void matmul_mxfp4_q8_avx2(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                          size_t n_tok, float* y, size_t ldy) {
  matmul_q8<MaddubsDot>(w, r0, n_rows, x, t0, n_tok, y, ldy);
}

void gemv_mxfp4_q8_avx2(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                        size_t n_tok, float* y, size_t ldy) {
  gemv_step<MaddubsDot>(w, r0, n_rows, x, t0, n_tok, y, ldy);
}

void matmul_mxfp4_lanes_q8_avx2(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x,
                                size_t t0, size_t n_tok, float* y, size_t ldy) {
  matmul_lanes<MaddubsDot>(w, r0, n_rows, x, t0, n_tok, y, ldy);
}

}  // namespace gptoss::cpu
