#pragma once
// The one choice of the kernel that multiplies a weight with an op's activations, from the
// weight's format, the token counts, the precision and the device's level (choose.cpp has it as
// a table). The ops ask once per op which activations to prepare (acts_for) and once per call
// which kernel runs it (choose_matmul); run_matmul calls it.
#include <cstddef>

#include "kernels.hpp"

namespace gptoss::cpu {

enum class MatmulKernel {
  // Kernels::fp32's paths, fp32 activations (kernel order for MXFP4 weights)
  fp32_gemv,
  fp32_row_blocks,
  fp32_pairs,
  fp32_panels,
  bf16_pairs,      // Kernels::dense_bf16, activations rounded to bf16 pairs
  q8,              // Kernels::matmul_mxfp4_q8, int8 activations
  q8_step,         // Kernels::gemv_mxfp4_q8: a decode step's tokens, each its one-token result
  q8_each_token,   // Kernels::matmul_mxfp4_q8 one token at a time over L2-sized row blocks
  bf16_lanes,      // Kernels::matmul_bf16_lanes: bf16 rows repacked at upload, fp32 activations
  q16,             // Kernels::matmul_q8_0_q16, int16 activations
  q16_each_token,  // Kernels::matmul_q8_0_q16 one token at a time over L2-sized row blocks
  q16_lanes,       // Kernels::matmul_q8_0_lanes_q16: Q8_0 rows repacked at upload, int16
  q8_lanes,        // Kernels::matmul_mxfp4_lanes_q8: MXFP4 experts repacked at upload, int8
};

// What a kernel takes as activations.
enum class MatmulActs { fp32, bf16_pairs, q8, q16 };
MatmulActs acts_of(MatmulKernel k);

// The kernel for `n_tok` tokens (of the `step_tokens` of the op: the whole batch, of which a
// MoE expert multiplies its share) of weight w, at level k, in the fast (`fast`) or the exact
// precision. Devices at Isa::scalar run the reference ops and never ask. Every kernel that takes
// the same activations gives a token the same bits (docs/architecture.md, "Determinism"), so
// the choice is one of speed only, but which activations a row takes (fp32, bf16 pairs, int8)
// depends on the weight and the precision alone.
MatmulKernel choose_matmul(const Kernels& k, const Weight& w, size_t step_tokens, size_t n_tok,
                           bool fast);
// The activations an op prepares for w: those of the kernel its step's tokens choose (every
// call of the op then chooses a kernel that takes them).
inline MatmulActs acts_for(const Kernels& k, const Weight& w, size_t step_tokens, bool fast) {
  return acts_of(choose_matmul(k, w, step_tokens, step_tokens, fast));
}

// An op's activations as acts_for says: fp32 rows (or rows of bf16 pairs) with stride ld, int8
// rows or int16 rows.
struct ActsView {
  const float* x = nullptr;
  size_t ld = 0;
  const Q8Acts* q8 = nullptr;
  const Q16Acts* q16 = nullptr;
};

// y[t * ldy + i] = row r0 + i of w times activation row t0 + t, for i < n_rows, t < n_tok,
// by `kernel` of level k.
void run_matmul(MatmulKernel kernel, const Kernels& k, const Weight& w, size_t r0, size_t n_rows,
                const ActsView& x, size_t t0, size_t n_tok, float* y, size_t ldy);

}  // namespace gptoss::cpu
