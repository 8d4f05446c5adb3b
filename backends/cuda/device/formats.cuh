#pragma once
// Element formats of the GPU kernels, bit for bit as the CPU reference defines them
// (backends/cpu/kernels/formats.hpp): bf16, E8M0 scales and E2M1 (MXFP4) codes. Host-testable
// (GPTOSS_HD): tests/backends/cuda/formats_test.cpp pins them to the CPU's tables.
#include "compat.cuh"

namespace gptoss::cuda {

GPTOSS_HD float bf16_to_f32(uint16_t h) { return bits_to_float(uint32_t(h) << 16); }

// Round to nearest even; NaN stays NaN (as f32_to_bf16 of the CPU backend).
GPTOSS_HD uint16_t f32_to_bf16(float f) {
  uint32_t bits = float_to_bits(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

// Two floats as a bf16 pair in one word, the first in the low half (the order of memory and
// of the operands of bf16 tensor-core instructions).
GPTOSS_HD uint32_t pack_bf16x2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t r;  // cvt.rn: round to nearest even, like f32_to_bf16 (NaN: a canonical NaN)
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return uint32_t(f32_to_bf16(lo)) | uint32_t(f32_to_bf16(hi)) << 16;
#endif
}

// E8M0 scale byte -> 2^(e-127), as the CPU's ldexp(1, e - 127) in float: e = 0 is the
// subnormal 2^-127, e = 255 overflows to +inf.
GPTOSS_HD float e8m0_to_f32(uint8_t e) {
  return e == 0 ? bits_to_float(0x00400000u) : bits_to_float(uint32_t(e) << 23);
}

// E2M1 decode to int8 without a memory table: the 16 values of 2v (v the code's value, so
// 0, 1, 2, 3, 4, 6, 8, 12 and their negatives: all exact integers) live in four words;
// byte_perm looks up the magnitude (low 3 bits of a nibble) in the positive and the negative
// half, and a third byte_perm picks per byte by the sign bit (bit 3).
//
// The low 16 bits of q hold four codes, code n in nibble n; byte n of the result is 2v of
// code n. With the checkpoint's nibble order (element 2j in the low nibble of byte j, 2j + 1
// in the high nibble), a 16-bit half of a code word holds four consecutive elements in
// order, so bytes come out in element order.
constexpr uint32_t kE2m1x2Pos0 = 0x03020100u;  // codes 0..3:  0, 1, 2, 3
constexpr uint32_t kE2m1x2Pos1 = 0x0c080604u;  // codes 4..7:  4, 6, 8, 12
constexpr uint32_t kE2m1x2Neg0 = 0xfdfeff00u;  // codes 8..11: 0, -1, -2, -3
constexpr uint32_t kE2m1x2Neg1 = 0xf4f8fafcu;  // codes 12..15: -4, -6, -8, -12

GPTOSS_HD uint32_t e2m1x4_to_i8x4(uint32_t q) {
  const uint32_t pos = byte_perm(kE2m1x2Pos0, kE2m1x2Pos1, q);
  const uint32_t neg = byte_perm(kE2m1x2Neg0, kE2m1x2Neg1, q);
  return byte_perm(pos, neg, 0x3210u | ((q & 0x8888u) >> 1));
}

// Eight consecutive elements (one 32-bit word of codes) -> two words of four int8 (2v each):
// out[0] = elements 0..3, out[1] = elements 4..7.
GPTOSS_HD void e2m1x8_to_i8x8(uint32_t codes, uint32_t out[2]) {
  out[0] = e2m1x4_to_i8x4(codes);
  out[1] = e2m1x4_to_i8x4(codes >> 16);
}

GPTOSS_HD int32_t i8_at(uint32_t word, int n) { return int32_t(int8_t(uint8_t(word >> (8 * n)))); }

// Activations quantized per block of 32 as llama.cpp's Q8 and the CPU's fast mode do:
// d = max|x| / 127, q = round-half-even(x / d) in [-127, 127] (the CPU backend's
// quantize_q8_reference multiplies by 1/d in float; so does this).
constexpr int kQ8Block = 32;
GPTOSS_HD float q8_inverse_scale(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

}  // namespace gptoss::cuda
