#pragma once
// Element formats of weights: scalar conversions, the two MXFP4 nibble orders, and
// dequantization of a canonical tensor to float (for tests, tools and reference paths; the
// backends have their own kernels).
#include <cstdint>
#include <cstring>
#include <vector>

#include "gptoss/backend.h"

namespace gptoss {

inline float bf16_to_f32(uint16_t h) {
  uint32_t bits = uint32_t{h} << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even; NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float f16_to_f32(uint16_t h);
// Round to nearest even, subnormals included; beyond the half range: infinity (finite inputs).
uint16_t f32_to_f16(float f);

// MXFP4 codes and scales decode with gptoss_mxfp4_value and gptoss_e8m0_to_f32
// (include/gptoss/backend.h), the one definition the backends share.

// One block of 32 codes: ggml keeps element j in the low nibble of qs[j] and element j+16 in
// the high nibble; OpenAI (canonical) keeps element 2j low and 2j+1 high in byte j.
void mxfp4_ggml_to_openai(const uint8_t* ggml_qs, uint8_t* openai);
void mxfp4_openai_to_ggml(const uint8_t* openai, uint8_t* ggml_qs);

// Number of elements of a canonical tensor (product of its shape).
int64_t num_elements(const gptoss_tensor_desc& desc);
// All elements as float, row-major. Throws gptoss::Error(invalid_argument) if the desc's
// sizes do not match its dtype and shape.
std::vector<float> dequantize(const gptoss_tensor_desc& desc);

}  // namespace gptoss
