// Scalar element conversions of libgptoss/model/dtypes.hpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "libgptoss/model/dtypes.hpp"

// Every finite half survives f16 -> f32 -> f16 (subnormals and signed zeros included), and a
// float half-way between two neighbouring halves rounds to the one with an even mantissa.
TEST_CASE("dtypes: f32_to_f16 inverts f16_to_f32 and rounds to nearest even", "[model]") {
  size_t bad = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00u) == 0x7c00u) continue;  // infinities and NaNs
    if (gptoss::f32_to_f16(gptoss::f16_to_f32(uint16_t(h))) != h && bad++ < 5)
      UNSCOPED_INFO("half " << h << " came back as " << gptoss::f32_to_f16(gptoss::f16_to_f32(uint16_t(h))));
  }
  CHECK(bad == 0);
  for (uint32_t h : {0x0000u, 0x0001u, 0x03ffu, 0x0400u, 0x3c00u, 0x3c01u, 0x7bfeu, 0x8401u}) {
    INFO("half " << h);
    const float a = gptoss::f16_to_f32(uint16_t(h)), b = gptoss::f16_to_f32(uint16_t(h + 1));
    const float mid = (a + b) / 2;  // exact in f32
    CHECK(gptoss::f32_to_f16(mid) == ((h & 1u) ? h + 1 : h));
    CHECK(gptoss::f32_to_f16(std::nextafter(mid, b)) == h + 1);
    CHECK(gptoss::f32_to_f16(std::nextafter(mid, a)) == h);
  }
  CHECK(gptoss::f32_to_f16(1e6f) == 0x7c00u);   // past the largest half: infinity
  CHECK(gptoss::f32_to_f16(-1e6f) == 0xfc00u);
  CHECK(gptoss::f32_to_f16(1e-9f) == 0x0000u);  // under half the smallest subnormal
  CHECK(gptoss::f32_to_f16(65519.0f) == 0x7bffu);  // rounds down to the largest half
  CHECK(gptoss::f32_to_f16(65520.0f) == 0x7c00u);  // the tie rounds up to infinity
}
