// The reference of the bf16-pair dense matmul (dense_bf16_kernels.hpp).
#include <cstdint>
#include <cstring>

#include "cpu_backend.hpp"
#include "dense_bf16_kernels.hpp"
#include "formats.hpp"

namespace gptoss::cpu {
namespace {

// Element k of a token's pairs: the low or high bf16 of lane k / 2.
float pair_element(const float* x2, size_t k) {
  uint32_t bits;
  std::memcpy(&bits, x2 + k / 2, 4);
  return bf16_to_f32(uint16_t(k % 2 == 0 ? bits & 0xffffu : bits >> 16));
}

void matmul_reference(const Weight& w, size_t r0, size_t n_rows, const float* x2, size_t ldx2,
                      size_t n_tok, float* y, size_t ldy) {
  for (size_t t = 0; t < n_tok; ++t)
    for (size_t i = 0; i < n_rows; ++i) {
      const auto* row = reinterpret_cast<const uint16_t*>(w.data + (r0 + i) * w.row_bytes);
      double sum = 0;
      for (size_t k = 0; k < w.cols; ++k)
        sum += double(bf16_to_f32(row[k])) * double(pair_element(x2 + t * ldx2, k));
      y[t * ldy + i] = float(sum);
    }
}

}  // namespace

namespace scalar {
extern const DenseBf16Kernels kDenseBf16;
const DenseBf16Kernels kDenseBf16 = {.matmul = matmul_reference};
}  // namespace scalar

}  // namespace gptoss::cpu
