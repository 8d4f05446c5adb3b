#pragma once
// The scalar level's kernels (the reference of every SIMD level), as its table names them.
#include "kernels.hpp"

namespace gptoss::cpu {
struct AttnKernels;
struct AttnBf16Kernels;
struct DenseBf16Kernels;
}  // namespace gptoss::cpu

namespace gptoss::cpu::scalar {

void matmul(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx, size_t n_tok,
            float* y, size_t ldy);            // matmul.cpp
extern const Fp32Paths kFp32Paths;            // matmul.cpp: every path is matmul
extern const AttnKernels kAttention;          // attention.cpp
extern const AttnBf16Kernels kAttentionBf16;  // attention.cpp
extern const DenseBf16Kernels kDenseBf16;     // dense_bf16.cpp

}  // namespace gptoss::cpu::scalar
