#pragma once
// The avx2vnni level's int8 kernels (int8.cpp): avx2's MXFP4 x int8 matmul and several-token
// GEMV with AVX-VNNI's VEX vpdpbusd, identical in results to avx2's (avx2/int8.hpp).
#include "kernels.hpp"

namespace gptoss::cpu {

void matmul_mxfp4_q8_avxvnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                             size_t n_tok, float* y, size_t ldy);
void gemv_mxfp4_q8_avxvnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                           size_t n_tok, float* y, size_t ldy);

}  // namespace gptoss::cpu
