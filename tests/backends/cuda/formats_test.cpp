// The CUDA kernels' bit-level helpers (backends/cuda/device/formats.cuh), compiled for the
// host with the intrinsics emulated, against the ABI's definitions of the formats
// (gptoss_mxfp4_value, gptoss_e8m0_to_f32) and the CPU backend's conversions: these run
// in CI without a GPU. What they cannot check is that the device intrinsics behave as the
// emulation (documented PTX semantics); backend-ops on a GPU checks the kernels end to end.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

#include "backends/cpu/kernels/formats.hpp"
#include "backends/cuda/device/formats.cuh"
#include "gptoss/backend.h"

namespace cu = gptoss::cuda;
namespace cpu = gptoss::cpu;

static uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST_CASE("cuda: byte_perm picks bytes by the low 3 bits of each selector nibble", "[cuda][formats]") {
  const uint32_t x = 0x33221100u, y = 0x77665544u;
  CHECK(cu::byte_perm(x, y, 0x3210u) == x);
  CHECK(cu::byte_perm(x, y, 0x7654u) == y);
  CHECK(cu::byte_perm(x, y, 0x0415u) == 0x00441155u);
  CHECK(cu::byte_perm(x, y, 0xffff8c9eu) == 0x00441166u);  // bit 3 and the upper half ignored
}

// CDNA's v_perm_b32 D = perm(S0, S1, sel) as the "AMD Instinct MI200 ISA" defines it: byte i
// of D is picked by byte i of sel from the 8 bytes {S0 : S1} (0..3: S1's, 4..7: S0's);
// 8..11 replicate a sign bit, 12 gives 0x00, 13..255 give 0xff.
static uint32_t v_perm_b32(uint32_t s0, uint32_t s1, uint32_t sel) {
  const uint64_t in = uint64_t(s0) << 32 | s1;
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t b = (sel >> (8 * i)) & 0xff;
    uint32_t out;
    if (b < 8)
      out = uint32_t(in >> (8 * b)) & 0xff;
    else if (b < 12)
      out = ((in >> (16 * (b - 8) + 15)) & 1) ? 0xff : 0x00;
    else
      out = b == 12 ? 0x00 : 0xff;
    d |= out << (8 * i);
  }
  return d;
}

TEST_CASE("hip: byte_perm through v_perm_b32 picks the bytes prmt picks", "[cuda][formats]") {
  std::mt19937 rng(20);
  for (int i = 0; i < 100000; ++i) {
    const uint32_t x = rng(), y = rng(), s = rng();  // upper selector bits and bit 3 random too
    REQUIRE(v_perm_b32(y, x, cu::perm_selector(s)) == cu::byte_perm(x, y, s));
  }
  // The E2M1 decode's own selectors (code nibbles; the sign pick 0x3210 | sign bits >> 1).
  for (uint32_t q = 0; q < 65536; ++q)
    REQUIRE(v_perm_b32(cu::kE2m1x2Pos1, cu::kE2m1x2Pos0, cu::perm_selector(q)) ==
            cu::byte_perm(cu::kE2m1x2Pos0, cu::kE2m1x2Pos1, q));
}

TEST_CASE("cuda: E2M1 codes decode to twice the CPU's values, in element order", "[cuda][formats]") {
  // Every 16-bit group of four codes.
  for (uint32_t q = 0; q < 65536; ++q) {
    const uint32_t r = cu::e2m1x4_to_i8x4(q | 0xabcd0000u);  // upper half must not matter
    for (int n = 0; n < 4; ++n) {
      const float expect = 2.0f * gptoss_mxfp4_value(uint8_t((q >> (4 * n)) & 15));
      REQUIRE(float(cu::i8_at(r, n)) == expect);
    }
  }
  // A word of codes as the checkpoint packs them: element 2j low nibble of byte j.
  const uint8_t codes[16] = {0x21, 0x43, 0x65, 0xf7, 0x9a, 0xbc, 0xde, 0x08};
  uint32_t word;
  std::memcpy(&word, codes, 4);
  uint32_t out[2];
  cu::e2m1x8_to_i8x8(word, out);
  float natural[32];
  cpu::mxfp4_decode_block(codes, 127, natural);  // scale 2^0
  for (int i = 0; i < 8; ++i) CHECK(float(cu::i8_at(out[i / 4], i % 4)) == 2.0f * natural[i]);
}

TEST_CASE("cuda: E8M0 scales equal the ABI's definition, bit for bit", "[cuda][formats]") {
  for (int e = 0; e < 256; ++e) {
    INFO(e);
    CHECK(bits(cu::e8m0_to_f32(uint8_t(e))) == bits(gptoss_e8m0_to_f32(uint8_t(e))));
  }
}

TEST_CASE("cuda: bf16 conversions equal the CPU's", "[cuda][formats]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 100000; ++i) {
    const uint32_t u = any(rng);
    float f;
    std::memcpy(&f, &u, 4);
    REQUIRE(cu::f32_to_bf16(f) == cpu::f32_to_bf16(f));
    REQUIRE(bits(cu::bf16_to_f32(uint16_t(u))) == bits(cpu::bf16_to_f32(uint16_t(u))));
  }
  const float a = 1.00390625f, b = -3.0f;  // a: halfway between two bf16, rounds to even
  CHECK(cu::pack_bf16x2(a, b) == (uint32_t(cpu::f32_to_bf16(a)) | uint32_t(cpu::f32_to_bf16(b)) << 16));
  CHECK(cpu::bf16_to_f32(uint16_t(cu::pack_bf16x2(a, b))) == 1.0f);
}

TEST_CASE("cuda: dot4_i8 is the dot product of signed bytes", "[cuda][formats]") {
  const uint32_t a = 0x80ff017fu, b = 0x7f02ff80u;  // (127, 1, -1, -128) . (-128, -1, 2, 127)
  CHECK(cu::dot4_i8(a, b, 5) == 5 + 127 * -128 + 1 * -1 + -1 * 2 + -128 * 127);
}
