// MXFP4 pinned to literal numbers: the E2M1 value table, E8M0 scales (255 included) and the
// nibble order, through every decoder that exists — the shared definitions of
// include/gptoss/backend.h, the core's dequantize and GGUF block conversion, and the CPU
// backend's row decoder (the reference its SIMD kernels are tested against).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/test_weights.hpp"
#include "gptoss/backend.h"
#include "libgptoss/model/dtypes.hpp"

namespace {

// One block: byte j holds element 2j (low nibble) and 2j+1 (high). Elements 0..15 are codes
// 0..15; elements 16..31 are the codes 1,0,3,2,...: every code once in each half.
const uint8_t kOpenAiBlock[16] = {0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE,
                                  0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF};
// The same block in ggml's order: byte j holds element j (low) and j + 16 (high).
const uint8_t kGgmlBlock[16] = {0x10, 0x01, 0x32, 0x23, 0x54, 0x45, 0x76, 0x67,
                                0x98, 0x89, 0xBA, 0xAB, 0xDC, 0xCD, 0xFE, 0xEF};
const uint8_t kScale = 128;  // 2^1
const float kValues[32] = {0, 1, 2, 3, 4, 6, 8, 12, -0.0f, -1, -2, -3, -4, -6, -8, -12,
                           1, 0, 3, 2, 6, 4, 12, 8, -1, -0.0f, -3, -2, -6, -4, -12, -8};

void check_block(const float* got) {
  for (int i = 0; i < 32; ++i) {
    INFO("element " << i);
    CHECK(got[i] == kValues[i]);
    CHECK(std::signbit(got[i]) == std::signbit(kValues[i]));
  }
}

}  // namespace

TEST_CASE("E2M1 codes and E8M0 scales decode to their literal values", "[formats]") {
  const float e2m1[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,
                          -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  for (uint8_t c = 0; c < 16; ++c) {
    INFO("code " << int(c));
    CHECK(gptoss_mxfp4_value(c) == e2m1[c]);
    CHECK(std::signbit(gptoss_mxfp4_value(c)) == (c >= 8));
  }
  CHECK(gptoss_e8m0_to_f32(0) == 0x1p-127f);  // the subnormal, not zero
  CHECK(gptoss_e8m0_to_f32(1) == 0x1p-126f);
  CHECK(gptoss_e8m0_to_f32(126) == 0.5f);
  CHECK(gptoss_e8m0_to_f32(127) == 1.0f);
  CHECK(gptoss_e8m0_to_f32(128) == 2.0f);
  CHECK(gptoss_e8m0_to_f32(254) == 0x1p127f);
  CHECK(gptoss_e8m0_to_f32(255) == INFINITY);  // 2^128: beyond float, as llama.cpp decodes it
}

TEST_CASE("MXFP4 nibble order: the core's dequantize and GGUF conversion", "[formats]") {
  gptoss_tensor_desc d{};
  d.struct_size = sizeof d;
  d.name = "block";
  d.dtype = gptoss_dtype_mxfp4;
  d.ndim = 2;
  d.shape[0] = 1;
  d.shape[1] = 32;
  d.data = kOpenAiBlock;
  d.data_size = 16;
  d.scales = &kScale;
  d.scales_size = 1;
  const std::vector<float> v = gptoss::dequantize(d);
  REQUIRE(v.size() == 32);
  check_block(v.data());

  uint8_t converted[16];
  gptoss::mxfp4_ggml_to_openai(kGgmlBlock, converted);
  CHECK(std::memcmp(converted, kOpenAiBlock, 16) == 0);
  uint8_t back[16];
  gptoss::mxfp4_openai_to_ggml(kOpenAiBlock, back);
  CHECK(std::memcmp(back, kGgmlBlock, 16) == 0);
}

TEST_CASE("MXFP4 nibble order: the CPU backend's row decoder", "[formats]") {
  gptoss::cpu::Weight w = gptoss::cpu::test::random_weight(gptoss_dtype_mxfp4, 1, 32, 1);
  std::memcpy(w.owned_data.data(), kOpenAiBlock, 16);
  w.owned_scales[0] = kScale;
  float row[32];
  gptoss::cpu::decode_row(w, 0, row);
  check_block(row);
  float half[8];
  gptoss::cpu::decode_row_range(w, 0, 20, 8, half);
  for (int i = 0; i < 8; ++i) CHECK(half[i] == kValues[20 + i]);
}
