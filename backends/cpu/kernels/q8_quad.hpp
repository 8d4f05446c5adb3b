#pragma once
// The quad-order layout of Q8Acts (kernels.hpp) as the SIMD translation units use it. In an
// anonymous namespace (like matmul_driver.hpp): each ISA's unit gets its own copy, compiled
// with its own flags, so no copy built for one ISA can be linked into another's.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels.hpp"

namespace gptoss::cpu {
namespace {

// Offset in a row of the 16 even elements of block b; its 16 odd ones follow 64 bytes later.
inline size_t quad_evens(size_t b) { return 128 * (b / 4) + 16 * (b % 4); }

// The per-block data of block b of quantized row t: d / 2 and the offset terms of the MXFP4
// codes and of the Q8_0 weights.
inline void store_block_terms(Q8Acts& out, size_t t, size_t b, float d, int32_t sum_q) {
  const size_t i = t * out.b_stride + b;
  out.half_d[i] = d * 0.5f;
  out.q12f[i] = float(12 * sum_q);
  out.neg_q12[i] = -12 * sum_q;
  out.neg_q128[i] = -128 * sum_q;
}

// Zeroes row t's padding: the int8 values of blocks [nb, q_stride / 32) and the per-block
// data of blocks [nb, b_stride), so the kernels can run over whole groups without tails.
inline void zero_row_padding(Q8Acts& out, size_t t, size_t nb) {
  int8_t* q = out.q + t * out.q_stride;
  for (size_t b = nb; b < out.q_stride / 32; ++b) {
    std::memset(q + quad_evens(b), 0, 16);
    std::memset(q + quad_evens(b) + 64, 0, 16);
  }
  for (size_t b = nb; b < out.b_stride; ++b) store_block_terms(out, t, b, 0.0f, 0);
}

}  // namespace
}  // namespace gptoss::cpu
