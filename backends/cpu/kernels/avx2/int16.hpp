#pragma once
// The fast mode's int16 path of the avx2 level (int16.cpp: vpmovsxbw + vpmaddwd, any AVX2 CPU),
// also in the avx512 level's table: Q8_0 weights the upload repacked in tiles of 16 rows
// (Weight::q8_0_lanes) times int16 activations (Q16Acts), with avx512vnni's order of a row's sum,
// so these give that level's bits.
#include "kernels.hpp"

namespace gptoss::cpu {

// Kernels::quantize_q16: quantize_q16_reference's bits.
void quantize_q16_avx2(const float* x, size_t ldx, size_t n_tok, Q16Acts& out);
// Kernels::matmul_q8_0_lanes_q16 on Weight::q8_0_lanes tiles, any token count.
void matmul_q8_0_lanes_q16_avx2(const Weight& w, size_t r0, size_t n_rows, const Q16Acts& x,
                                size_t t0, size_t n_tok, float* y, size_t ldy);

}  // namespace gptoss::cpu
