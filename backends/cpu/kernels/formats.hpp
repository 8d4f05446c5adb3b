#pragma once
// Scalar conversions of the weight formats of include/gptoss/backend.h. The reference every
// SIMD path is tested against.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "gptoss/backend.h"

namespace gptoss::cpu {

inline float bf16_to_f32(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t f32_to_bf16(float f) {  // round to nearest even; NaN stays NaN
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  float f;
  if (exp == 0) {  // zero or subnormal: man * 2^-24
    f = std::ldexp(float(man), -24);
    if (sign) f = -f;
    return f;
  }
  uint32_t bits = exp == 31 ? (sign | 0x7f800000u | (man << 13))
                            : (sign | ((exp + 112u) << 23) | (man << 13));
  std::memcpy(&f, &bits, 4);
  return f;
}

// MXFP4 values (E2M1 codes, E8M0 scales): gptoss_mxfp4_value and gptoss_e8m0_to_f32 of
// include/gptoss/backend.h, the one definition the core and every backend share.

// Decodes one MXFP4 block (16 code bytes, OpenAI nibble order) into 32 floats.
inline void mxfp4_decode_block(const uint8_t* codes, uint8_t scale, float* out) {
  const float s = gptoss_e8m0_to_f32(scale);
  for (int j = 0; j < 16; ++j) {
    out[2 * j] = gptoss_mxfp4_value(codes[j] & 0x0f) * s;
    out[2 * j + 1] = gptoss_mxfp4_value(uint8_t(codes[j] >> 4)) * s;
  }
}

// ggml Q8_0: 34-byte blocks {f16 d; int8 q[32]}.
constexpr size_t kQ8_0BlockBytes = 34;
// A block of a tile of Weight::q8_0_lanes (16 rows): 16 vectors of 32 int8, then at
// kQ8_0LanesStepsAt the 16 rows' f16 steps.
constexpr size_t kQ8_0LanesBlockBytes = 16 * kQ8_0BlockBytes;
constexpr size_t kQ8_0LanesStepsAt = 512;

// Weight::mxfp4_lanes, a tile of 16 rows: its blocks in the order the int8 kernels sum them
// (16 chains, chain m holding blocks m, m + 16, ... in turn; the chains one after another), block
// b at position mxfp4_lanes_pos(b, nb) of the tile. A block is 4 vectors of 16 dwords, vector g
// holding code bytes 4g .. 4g + 3 of row r's block in dword r (low nibbles: elements 8g + 2j,
// high: 8g + 2j + 1); the tile's scales, 16 bytes a block (byte r: row r's), in the same order.
constexpr size_t kMxfp4LanesBlockBytes = 16 * 16;
inline size_t mxfp4_lanes_pos(size_t b, size_t nb) {
  const size_t m = b % 16, full = nb / 16, longer = nb % 16;  // chains m < longer: full + 1 blocks
  return m * full + (m < longer ? m : longer) + b / 16;
}
// Where in its tile's codes code bytes 4g .. 4g + 3 of row r's block b lie.
inline size_t mxfp4_lanes_code_at(size_t b, size_t nb, size_t g, size_t r) {
  return kMxfp4LanesBlockBytes * mxfp4_lanes_pos(b, nb) + 64 * g + 4 * r;
}

inline void q8_0_decode_block(const uint8_t* block, float* out) {
  uint16_t d16;
  std::memcpy(&d16, block, 2);
  const float d = f16_to_f32(d16);
  const int8_t* q = reinterpret_cast<const int8_t*>(block + 2);
  for (int j = 0; j < 32; ++j) out[j] = d * float(q[j]);
}

}  // namespace gptoss::cpu
