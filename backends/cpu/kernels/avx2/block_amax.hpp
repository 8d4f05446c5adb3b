#pragma once
// The largest |x| of a block of 32 floats, for the avx2 level's quantizers (int8.cpp,
// int16.cpp; included only by sources built with -mavx2). The four vectors come back in v for
// the quantizer's scaling.
#include <immintrin.h>

namespace gptoss::cpu::avx2 {

inline float block_amax(const float* x, __m256 (&v)[4]) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(x + 8 * i);
  const __m256 m =
      _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                    _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  return _mm_cvtss_f32(m4);
}

}  // namespace gptoss::cpu::avx2
