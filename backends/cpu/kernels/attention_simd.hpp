#pragma once
// The parts of the attention tile kernels that need only AVX2 + FMA, shared by
// avx2/attention.cpp and avx512/attention.cpp: gathering a K tile transposed (8x8 register
// transposes: 0.4 shuffles per element instead of one scalar store each) and widening bf16 V
// rows. In an anonymous namespace, so each translation unit gets its own copy built with its
// own -m flags (see matmul_driver.hpp for why that matters).
#include <immintrin.h>

#include "attention_kernels.hpp"

namespace gptoss::cpu {
namespace {

inline __m256 load8(const void* row, size_t d, int bf16) {
  if (bf16) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + d));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  return _mm256_loadu_ps(static_cast<const float*>(row) + d);
}

inline float load1(const void* row, size_t d, int bf16) {
  if (bf16) {
    const int bits = int(uint32_t(static_cast<const uint16_t*>(row)[d]) << 16);
    return _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128(bits)));
  }
  return static_cast<const float*>(row)[d];
}

// r[k] lane d <- r[d] lane k.
inline void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {  // rows 4i..4i+3
    u[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x20);
    r[4 + i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x31);
  }
}

void load_k_tile(const void* const* rows, size_t n, size_t hd, int bf16, float* kt) {
  for (size_t i0 = 0; i0 < kAttnTile; i0 += 8) {
    if (i0 + 8 > n) {  // the last, partial group of the last tile of a range
      for (size_t d = 0; d < hd; ++d)
        for (size_t k = 0; k < 8; ++k)
          kt[d * kAttnTile + i0 + k] = i0 + k < n ? load1(rows[i0 + k], d, bf16) : 0.0f;
      continue;
    }
    size_t d = 0;
    for (; d + 8 <= hd; d += 8) {
      __m256 r[8];
      for (size_t k = 0; k < 8; ++k) r[k] = load8(rows[i0 + k], d, bf16);
      transpose8(r);
      for (size_t k = 0; k < 8; ++k) _mm256_storeu_ps(kt + (d + k) * kAttnTile + i0, r[k]);
    }
    for (; d < hd; ++d)
      for (size_t k = 0; k < 8; ++k) kt[d * kAttnTile + i0 + k] = load1(rows[i0 + k], d, bf16);
  }
}

void widen_rows(const void* const* rows, size_t n, size_t hd, float* vt) {
  for (size_t i = 0; i < n; ++i) {
    size_t d = 0;
    for (; d + 8 <= hd; d += 8) _mm256_storeu_ps(vt + i * hd + d, load8(rows[i], d, 1));
    for (; d < hd; ++d) vt[i * hd + d] = load1(rows[i], d, 1);
  }
}

}  // namespace
}  // namespace gptoss::cpu
