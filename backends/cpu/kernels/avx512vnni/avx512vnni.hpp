#pragma once
// The avx512vnni level's int8 kernels (vpdpbusd on 512 bits; int8.cpp) and its int16 ones
// (vpdpwssd; int16.cpp), as its table and the higher levels' tables name them.
#include "kernels.hpp"

namespace gptoss::cpu {

void quantize_q8_avx512vnni(const float* x, size_t ldx, size_t n_tok, Q8Acts& out);
void matmul_mxfp4_q8_avx512vnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x,
                                size_t t0, size_t n_tok, float* y, size_t ldy);
void matmul_mxfp4_lanes_q8_avx512vnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x,
                                      size_t t0, size_t n_tok, float* y, size_t ldy);
void repack_mxfp4_lanes_avx512vnni(const uint8_t* codes, const uint8_t* scales, size_t cols,
                                   size_t i0, size_t i1, uint8_t* dst_codes, uint8_t* dst_scales);
void gemv_mxfp4_q8_avx512vnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                              size_t n_tok, float* y, size_t ldy);
void matmul_q8_0_q8_avx512vnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x,
                               size_t t0, size_t n_tok, float* y, size_t ldy);
void gemv_q8_0_q8_avx512vnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                             size_t n_tok, float* y, size_t ldy);
void quantize_q16_avx512vnni(const float* x, size_t ldx, size_t n_tok, Q16Acts& out);
void matmul_q8_0_q16_avx512vnni(const Weight& w, size_t r0, size_t n_rows, const Q16Acts& x,
                                size_t t0, size_t n_tok, float* y, size_t ldy);
void matmul_q8_0_lanes_q16_avx512vnni(const Weight& w, size_t r0, size_t n_rows, const Q16Acts& x,
                                      size_t t0, size_t n_tok, float* y, size_t ldy);

}  // namespace gptoss::cpu
