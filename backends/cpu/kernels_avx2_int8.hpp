#pragma once
// The fast-mode int8 kernels of the avx2 level (kernels_avx2_int8.cpp, kernels_avx2_vnni.cpp).
// Two variants of the MXFP4 x int8 matmul (and its several-token GEMV) that give identical results (integer block sums):
// one with vpmaddubsw + vpmaddwd (any AVX2 CPU), one with the VEX vpdpbusd of AVX-VNNI
// (Alder Lake and later, Zen 5). kernels_for(Isa::avx2) picks the latter where cpuid has it;
// the tests call both directly.
#include "kernels.hpp"

namespace gptoss::cpu {

void quantize_q8_avx2(const float* x, size_t ldx, size_t n_tok, Q8Acts& out);
void matmul_mxfp4_q8_avx2(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                          size_t n_tok, float* y, size_t ldy);
void matmul_mxfp4_q8_avxvnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x,
                             size_t t0, size_t n_tok, float* y, size_t ldy);
// Kernels::gemv_mxfp4_q8 of the two variants: a decode step's tokens, each exactly its
// one-token result of the variant's matmul.
void gemv_mxfp4_q8_avx2(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                        size_t n_tok, float* y, size_t ldy);
void gemv_mxfp4_q8_avxvnni(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                           size_t n_tok, float* y, size_t ldy);
// Whether cpuid reports AVX-VNNI (false off x86).
bool cpu_has_avxvnni();

}  // namespace gptoss::cpu
