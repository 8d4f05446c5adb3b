#pragma once
// The avx2 level's kernels (AVX2 + FMA + F16C), as its table and the higher levels' tables
// name them. The int8 kernels are declared in avx2/int8.hpp.
#include "kernels.hpp"

namespace gptoss::cpu {
struct AttnKernels;
}  // namespace gptoss::cpu

namespace gptoss::cpu::avx2 {

void matmul(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx, size_t n_tok,
            float* y, size_t ldy);                      // matmul.cpp
extern const Fp32Paths kFp32Paths;                      // matmul.cpp
double sum_exp(const float* x, size_t n, float shift);  // matmul.cpp
extern const AttnKernels kAttention;                    // attention.cpp

}  // namespace gptoss::cpu::avx2
