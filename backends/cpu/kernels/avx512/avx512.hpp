#pragma once
// The avx512 level's kernels (AVX-512 F/BW/VL/DQ), as its table and the higher levels' tables
// name them.
#include "kernels.hpp"

namespace gptoss::cpu {
struct AttnKernels;
}  // namespace gptoss::cpu

namespace gptoss::cpu::avx512 {

void matmul(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx, size_t n_tok,
            float* y, size_t ldy);                                               // matmul.cpp
extern const Fp32Paths kFp32Paths;                                               // matmul.cpp
void swiglu(const float* h, const float* b, size_t n, float limit, float* out);  // matmul.cpp
double sum_exp(const float* x, size_t n, float shift);                           // matmul.cpp
void matmul_bf16_lanes(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx,
                       size_t n_tok, float* y, size_t ldy);  // bf16_lanes.cpp
void repack_bf16_lanes(const uint16_t* src, size_t cols, size_t i0, size_t i1,
                       uint16_t* dst);  // bf16_lanes.cpp
extern const AttnKernels kAttention;    // attention.cpp

}  // namespace gptoss::cpu::avx512
