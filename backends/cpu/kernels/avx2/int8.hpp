#pragma once
// The fast-mode int8 kernels of the avx2 level (int8.cpp, with vpmaddubsw + vpmaddwd: any AVX2
// CPU), also in the avx512 level's table. avx2vnni/avx2vnni.hpp has the AVX-VNNI variant of the
// matmul and the GEMV, which gives identical results (integer block sums).
#include "kernels.hpp"

namespace gptoss::cpu {

void quantize_q8_avx2(const float* x, size_t ldx, size_t n_tok, Q8Acts& out);
void matmul_mxfp4_q8_avx2(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                          size_t n_tok, float* y, size_t ldy);
// Kernels::gemv_mxfp4_q8: a decode step's tokens, each exactly its one-token result of the
// matmul.
void gemv_mxfp4_q8_avx2(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                        size_t n_tok, float* y, size_t ldy);
// Kernels::matmul_mxfp4_lanes_q8: the two above's bits on a weight the upload laid out in tiles
// of 16 rows (Weight::mxfp4_lanes), which it reads as two panels of 8 rows each.
void matmul_mxfp4_lanes_q8_avx2(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x,
                                size_t t0, size_t n_tok, float* y, size_t ldy);

}  // namespace gptoss::cpu
