#pragma once
// The CPU backend's inner kernels, one table per instruction-set level. The scalar table is
// the reference every SIMD table is tested against (tests/backends/cpu/).
//
// Order of MXFP4 rows ("kernel order"): the checkpoint packs element 2j of a 32-block in the
// low nibble of byte j and 2j+1 in the high nibble. Kernels decode a block as its 16 even
// elements followed by its 16 odd ones, which costs no shuffles; the activations multiplied
// with an MXFP4 row must be permuted the same way first (permute_for_mxfp4). Dot products do
// not depend on the order beyond rounding.
#include <cstddef>
#include <cstdint>

#include "gptoss/backend.h"

namespace gptoss::cpu {

struct Weight;

enum class Isa : int { scalar = 0, avx2 = 1, avx512 = 2 };

const char* isa_name(Isa isa);
// The best level this CPU supports (cpuid via __builtin_cpu_supports).
Isa isa_detect();
// isa_detect(), lowered by GPTOSS_CPU_ISA=scalar|avx2|avx512 (a level above what the CPU
// supports is clamped to it; an unknown value is ignored).
Isa isa_selected();

struct Kernels {
  Isa isa;
  // y[t * ldy + i] = dot(row r0 + i of w, x + t * ldx) for i < n_rows, t < n_tok.
  // x is in kernel order when w is MXFP4. Any dtype of backend.h is accepted.
  void (*matmul)(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx,
                 size_t n_tok, float* y, size_t ldy);
  float (*dot)(const float* a, const float* b, size_t n);
  // acc[i] = acc[i] * a + p * v[i]
  void (*scale_add)(float* acc, float a, float p, const float* v, size_t n);
};

// Kernels of one level (that level must be supported by the CPU to be called).
const Kernels& kernels_for(Isa isa);

// Decodes row `row` of w into out in kernel order (natural order except for MXFP4).
void decode_row_kernel_order(const Weight& w, size_t row, float* out);

// dst = x with every 32-block reordered evens-then-odds (cols % 32 == 0), for n_tok rows.
void permute_for_mxfp4(const float* x, size_t ldx, size_t n_tok, size_t cols, float* dst);
// Position of natural element j within its 32-block in kernel order.
inline size_t mxfp4_kernel_pos(size_t j) {
  const size_t in = j & 31;
  return (j & ~size_t(31)) + ((in & 1) ? 16 + in / 2 : in / 2);
}

// Scale byte -> 2^(e-127), as a table for the kernels.
const float* e8m0_table();

}  // namespace gptoss::cpu

namespace gptoss::cpu {
// For the SIMD translation units, which must not instantiate std templates or inline functions
// of shared headers (the linker could keep their AVX-512 copy for every caller):
// the scalar matmul for the dtypes they do not specialise, and per-thread scratch memory.
void matmul_fallback(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx,
                     size_t n_tok, float* y, size_t ldy);
// A per-thread float buffer of at least n elements, 64-byte aligned; `slot` < 4 picks one of
// several independent buffers. Valid until the next call with the same slot on this thread.
float* thread_scratch(size_t n, int slot);
}  // namespace gptoss::cpu
