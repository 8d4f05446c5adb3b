#pragma once
// Fast precision's unembedding in decode steps at the avx512bf16 level (the chooser's table,
// kernels/choose.cpp, says when): bf16 weights times activations rounded to bf16, with vdpbf16ps
// (both products of a pair of bf16 added to an fp32 sum), as llama.cpp multiplies bf16 tensors. One
// instruction then takes 32 weights where the fp32 GEMV widens 16 per load and needs one FMA per
// 16 per token: a decode step of several sequences is bound by that arithmetic on few cores.
//
// Activations are arrays of pairs, as the attention's bf16 kernels use them (round_pairs in
// attention_kernels.hpp): each 32-bit lane holds elements 2i (low half) and 2i + 1 rounded to
// bf16; a token's row is padded with zero pairs to a multiple of 16 pairs.
#include <cstddef>

#include "kernels.hpp"

namespace gptoss::cpu {

struct Weight;

struct DenseBf16Kernels {
  // y[t * ldy + i] = the dot product of row r0 + i of w (bf16, cols even) with the pairs
  // x2 + t * ldx2, for i < n_rows and t < n_tok. Every (row, token) gets the same arithmetic
  // whatever the other tokens and rows of the call: a token decoding with others gets exactly
  // its one-token result, and results do not depend on how the caller cut the rows.
  void (*matmul)(const Weight& w, size_t r0, size_t n_rows, const float* x2, size_t ldx2,
                 size_t n_tok, float* y, size_t ldy);
};

// Pairs per token row of x2 for cols columns: cols / 2 rounded up to a multiple of 16.
inline size_t dense_bf16_pairs_stride(size_t cols) { return (cols / 2 + 15) / 16 * 16; }

// kernels_for(isa).dense_bf16: the reference at Isa::scalar (tests; the sum in double), null
// below avx512bf16.
const DenseBf16Kernels* dense_bf16_kernels_for(Isa isa);

}  // namespace gptoss::cpu
