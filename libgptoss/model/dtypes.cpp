#include "libgptoss/model/dtypes.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <cmath>
#include <limits>

#include "libgptoss/common/error.hpp"

namespace gptoss {

float f16_to_f32(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);  // subnormal
  } else if (exp == 31) {
    v = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  }
  return sign ? -v : v;
}

uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int32_t e = int32_t((x >> 23) & 0xff) - 127 + 15;
  if (e >= 31) return uint16_t(sign | 0x7c00u);  // overflow: infinity
  if (e < -10) return uint16_t(sign);            // under half the smallest subnormal: zero
  // Significand with its leading one, and how many of its 24 bits drop out of the half's 11
  // (more for subnormals).
  const uint32_t sig = (x & 0x7fffffu) | 0x800000u;
  const uint32_t shift = e > 0 ? 13u : uint32_t(14 - e);
  uint32_t h = sig >> shift;
  const uint32_t rest = sig & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (h & 1u))) ++h;  // may carry into the exponent: fine
  if (e > 0) h = (uint32_t(e) << 10) + (h - 0x400u);    // normal: replace the leading one
  return uint16_t(sign | h);
}

void mxfp4_ggml_to_openai(const uint8_t* ggml_qs, uint8_t* openai) {
  // Canonical element k sits in ggml byte k % 16, low nibble for k < 16, high for k >= 16:
  // canonical bytes 0..7 pair the low nibbles of ggml bytes 2j, 2j+1, bytes 8..15 their high
  // nibbles. The GGUF loader converts every expert block through here (650 M for the 20b).
#if defined(__SSE2__)
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ggml_qs));
  const __m128i m0f = _mm_set1_epi16(0x0f), mf0 = _mm_set1_epi16(0xf0);
  const __m128i even = _mm_and_si128(v, _mm_set1_epi16(0xff)), odd = _mm_srli_epi16(v, 8);
  const __m128i lo = _mm_or_si128(_mm_and_si128(even, m0f), _mm_slli_epi16(_mm_and_si128(odd, m0f), 4));
  const __m128i hi = _mm_or_si128(_mm_srli_epi16(even, 4), _mm_and_si128(odd, mf0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(openai), _mm_packus_epi16(lo, hi));
#else
  for (int j = 0; j < 8; ++j) {
    const uint8_t a = ggml_qs[2 * j], b = ggml_qs[2 * j + 1];
    openai[j] = static_cast<uint8_t>((a & 0x0f) | (b << 4));
    openai[j + 8] = static_cast<uint8_t>((a >> 4) | (b & 0xf0));
  }
#endif
}

void mxfp4_openai_to_ggml(const uint8_t* openai, uint8_t* ggml_qs) {
  auto code = [&](int k) -> uint8_t { return (openai[k / 2] >> (4 * (k % 2))) & 0xf; };
  for (int j = 0; j < 16; ++j) ggml_qs[j] = static_cast<uint8_t>(code(j) | (code(j + 16) << 4));
}

int64_t num_elements(const gptoss_tensor_desc& desc) {
  int64_t n = 1;
  for (uint32_t i = 0; i < desc.ndim && i < 4; ++i) n *= desc.shape[i];
  return n;
}

std::vector<float> dequantize(const gptoss_tensor_desc& d) {
  if (d.ndim < 1 || d.ndim > 4)
    fail(gptoss_status_invalid_argument, "{}: ndim {} out of range", d.name, d.ndim);
  const int64_t n = num_elements(d);
  const auto* p = static_cast<const uint8_t*>(d.data);
  auto expect = [&](size_t data_bytes, size_t scale_bytes) {
    if (d.data_size != data_bytes || d.scales_size != scale_bytes)
      fail(gptoss_status_invalid_argument,
           "{}: {} data / {} scale bytes, expected {} / {} for its dtype and shape", d.name,
           d.data_size, d.scales_size, data_bytes, scale_bytes);
  };
  std::vector<float> out(static_cast<size_t>(n));
  switch (d.dtype) {
    case gptoss_dtype_f32:
      expect(n * 4, 0);
      std::memcpy(out.data(), p, n * 4);
      break;
    case gptoss_dtype_bf16:
    case gptoss_dtype_f16:
      expect(n * 2, 0);
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = d.dtype == gptoss_dtype_bf16 ? bf16_to_f32(h) : f16_to_f32(h);
      }
      break;
    case gptoss_dtype_q8_0:
      if (n % 32) fail(gptoss_status_invalid_argument, "{}: q8_0 with {} elements", d.name, n);
      expect(n / 32 * 34, 0);
      for (int64_t b = 0; b < n / 32; ++b) {
        uint16_t h;
        std::memcpy(&h, p + 34 * b, 2);
        const float scale = f16_to_f32(h);
        for (int i = 0; i < 32; ++i)
          out[32 * b + i] = scale * static_cast<float>(static_cast<int8_t>(p[34 * b + 2 + i]));
      }
      break;
    case gptoss_dtype_mxfp4: {
      if (n % 32) fail(gptoss_status_invalid_argument, "{}: mxfp4 with {} elements", d.name, n);
      expect(n / 2, n / 32);
      const auto* s = static_cast<const uint8_t*>(d.scales);
      for (int64_t b = 0; b < n / 32; ++b) {
        const float scale = gptoss_e8m0_to_f32(s[b]);
        for (int j = 0; j < 16; ++j) {
          const uint8_t byte = p[16 * b + j];
          out[32 * b + 2 * j] = gptoss_mxfp4_value(byte & 0xf) * scale;
          out[32 * b + 2 * j + 1] = gptoss_mxfp4_value(uint8_t(byte >> 4)) * scale;
        }
      }
      break;
    }
    default:
      fail(gptoss_status_invalid_argument, "{}: unknown dtype {}", d.name, static_cast<int>(d.dtype));
  }
  return out;
}

}  // namespace gptoss
