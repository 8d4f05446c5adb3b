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

// The levels, in increasing order. Each has its own folder (kernels/<level>/) whose table.cpp
// defines the level's Kernels, complete at compile time; kernels_for (levels.cpp) is the one
// lookup. A level runs the kernels of the levels below it unless its folder has its own, and
// its table names them explicitly. One exception to "each includes the ones below": avx512
// (Skylake-SP) has no AVX-VNNI, so its table names the avx2 int8 kernels, not avx2vnni's.
//   scalar      the reference ops (ops/reference.cpp); its table is the kernels' reference
//   avx2        AVX2 + FMA + F16C: fp32 kernels; int8 MXFP4 kernels with vpmaddubsw
//   avx2vnni    avx2 with AVX-VNNI's VEX vpdpbusd for the int8 kernels (Alder Lake, Zen 5)
//   avx512      AVX-512 F/BW/VL/DQ: fp32 kernels, the SwiGLU
//   avx512vnni  avx512 with vpdpbusd on 512 bits for the int8 kernels
//   avx512bf16  avx512vnni with vdpbf16ps: bf16-pair attention and unembedding (fast mode)
enum class Isa : int { scalar = 0, avx2, avx2vnni, avx512, avx512vnni, avx512bf16 };
constexpr Isa kAllIsas[] = {Isa::scalar, Isa::avx2,       Isa::avx2vnni,
                            Isa::avx512, Isa::avx512vnni, Isa::avx512bf16};

const char* isa_name(Isa isa);
// Whether this CPU can run the level (cpuid; false for every SIMD level off x86).
bool isa_supported(Isa isa);
// The best level this CPU supports.
Isa isa_detect();
// isa_detect(), lowered by GPTOSS_CPU_ISA=<isa_name> to the best supported level at or below
// the one named (never above isa_detect(); an unknown value is ignored).
Isa isa_selected();
// Whether cpuid reports AVX-VNNI (false off x86).
bool cpu_has_avxvnni();

// Activations quantized for the fast mode (Q8 as in llama.cpp's MXFP4 x Q8 dot): per token and
// per 32-block, d = max|x| / 127 and q = round-to-nearest-even(x / d) as int8. Filled by
// quantize_q8 from floats in natural order; storage owned by the caller (q8_storage.hpp).
//
// Layout of q ("quad order"): blocks in groups of 4; a group's 128 bytes are the 16 even
// elements of each of its 4 blocks (64 bytes), then their 16 odd elements. That is where a
// 64-byte load of 4 blocks of MXFP4 codes puts them once split into low and high nibbles, so
// decode needs no shuffles (q8_pos gives the position). Rows are zero-padded to whole groups
// and half_d etc. to a multiple of 16 blocks, so the SIMD kernels never need a tail on x.
//
// The kernels multiply int8 x by MXFP4 codes mapped to u8 as 2v + 12 (v the E2M1 value, so
// 0..24): vpdpbusd wants one unsigned operand. Then per block b of a row with scale s_b:
//   dot_b = s_b * d_b * sum(v q) = (s_b * d_b / 2) * (sum((2v + 12) q) - 12 * sum(q))
// half_d holds d_b / 2, q12f holds 12 * sum(q) and neg_q12 holds -12 * sum(q) per block.
//
// Q8_0 weights (int8 w, one f16 step e_b per block) take the same activations: the kernels map
// w to u8 as w + 128 and per block
//   dot_b = e_b * d_b * sum(w q) = (2 e_b * d_b / 2) * (sum((w + 128) q) - 128 * sum(q))
// with neg_q128 holding -128 * sum(q) per block.
struct Q8Acts {
  size_t n_tok;
  size_t cols;      // logical columns (multiple of 32)
  size_t q_stride;  // bytes per token in q (multiple of 128, >= cols)
  size_t b_stride;  // entries per token in half_d / q12f / neg_q12 / neg_q128 (multiple of 16)
  int8_t* q;
  float* half_d;
  float* q12f;
  int32_t* neg_q12;
  int32_t* neg_q128;
};

// Activations quantized to int16 for the fast mode's Q8_0 attention projections: per token and
// per 32-block, d = max|x| / 32767 and q = round-to-nearest-even(x / d), in natural order. Int8
// activations there about double the fast precision's error on the logits set
// (docs/performance.md, "Q8_0 times int8 and int16"); int16 ones leave it where fp32 ones had
// it (their rounding is 1/256 of int8's), and vpdpwssd still does 32 multiply-adds an
// instruction, twice an fp32 FMA. Filled by quantize_q16; storage owned by the caller
// (q8_storage.hpp). Rows are zero-padded to whole chunks of 16 blocks (q and d), so the SIMD
// kernels never need a tail on x.
struct Q16Acts {
  size_t n_tok;
  size_t cols;      // logical columns (multiple of 32)
  size_t q_stride;  // int16 values per token in q (multiple of 512, >= cols)
  size_t b_stride;  // entries per token in d (q_stride / 32)
  int16_t* q;
  float* d;
};

// The fp32 matmul's paths at a level (matmul_driver.hpp), each with Kernels::matmul's contract
// and, for a (row, token), the same arithmetic whatever the path: the chooser (choose.cpp)
// picks one per call by speed alone.
struct Fp32Paths {
  using Fn = void (*)(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx,
                      size_t n_tok, float* y, size_t ldy);
  Fn gemv;        // one token at a time, 4 rows far apart sharing each load of x
  Fn row_blocks;  // the GEMV per token over L2-sized blocks of rows (a few tokens)
  bool (*has_pairs)(gptoss_dtype dtype);
  Fn pairs;   // two tokens per row read (a decode step's tokens); needs has_pairs
  Fn panels;  // rows decoded once into an fp32 panel, register tiles over it (prefill)
};

struct AttnKernels;       // attention_kernels.hpp
struct AttnBf16Kernels;   // attention_kernels.hpp
struct DenseBf16Kernels;  // dense_bf16_kernels.hpp

// One level's kernels. Every field is set in the level's table.cpp; a null pointer means the
// level has no such kernel, and the chooser (choose.hpp) then takes another row.
struct Kernels {
  // The int8 kernels' signature: rows [r0, r0 + n_rows) of w times tokens [t0, t0 + n_tok) of x.
  using Int8Matmul = void (*)(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                              size_t n_tok, float* y, size_t ldy);
  Isa isa;
  // y[t * ldy + i] = dot(row r0 + i of w, x + t * ldx) for i < n_rows, t < n_tok.
  // x is in kernel order when w is MXFP4. Any dtype of backend.h is accepted.
  // Any token count: the path the chooser would take for a call of n_tok tokens.
  void (*matmul)(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx,
                 size_t n_tok, float* y, size_t ldy);
  // Its paths, for the chooser.
  const Fp32Paths* fp32;
  // The MoE's clamped SwiGLU over interleaved glu/linear outputs h (and biases b, NULL = 0):
  // g = min(h[2i] + b[2i], limit), l = clamp(h[2i+1] + b[2i+1], -limit, limit),
  // out[i] = g * sigmoid(1.702 g) * (l + 1) for i < n. AVX-512 levels use a polynomial exp
  // (within 1e-6 relative of the formula in double; tested).
  void (*swiglu)(const float* h, const float* b, size_t n, float limit, float* out);
  // The sum over i < n of exp(x[i] - shift), x[i] <= shift, in double; -inf and NaN add 0.
  // The normaliser of the sample op's log-probabilities (a pass over the whole vocabulary
  // every token). Scalar: std::exp in double; SIMD levels: a polynomial exp in float (1e-7
  // relative), summed in double.
  double (*sum_exp)(const float* x, size_t n, float shift);
  // Fast mode; null at scalar (whose devices run the reference ops).
  // x (n_tok rows in natural order, stride ldx) -> out (prepared for n_tok x out.cols); the
  // kernel-order permutation of MXFP4 rows is folded into the quad layout.
  void (*quantize_q8)(const float* x, size_t ldx, size_t n_tok, Q8Acts& out);
  // Like matmul for an MXFP4 weight, with tokens [t0, t0 + n_tok) of quantized activations.
  Int8Matmul matmul_mxfp4_q8;
  // Fast mode, a decode step's few tokens (n_tok <= kGemvStepTokens) of an MXFP4 weight: each
  // token exactly matmul_mxfp4_q8's one-token result, the codes decoded once for several
  // tokens. Null where a level has none.
  Int8Matmul gemv_mxfp4_q8;
  // The same two for a Q8_0 weight (the attention projections and the unembedding of a GGUF
  // with Q8_0 dense tensors): int8 weights times int8 activations. Null where a level has none.
  Int8Matmul matmul_q8_0_q8;
  Int8Matmul gemv_q8_0_q8;
  // Fast mode, a Q8_0 weight's int16 path (the attention projections of a GGUF with Q8_0
  // dense tensors): x (n_tok rows, natural order, stride ldx) -> out, prepared for n_tok x
  // out.cols; and the matmul over tokens [t0, t0 + n_tok) of such activations, any token count
  // (a GEMV for one token, panels for more), every path a token's one-token bits. Per block
  // the exact int32 sum(w q), converted to float and scaled by e_b * d_b, in 16 chains
  // (matmul_q8_0_q16_reference has the exact sum). Null where a level has none.
  void (*quantize_q16)(const float* x, size_t ldx, size_t n_tok, Q16Acts& out);
  void (*matmul_q8_0_q16)(const Weight& w, size_t r0, size_t n_rows, const Q16Acts& x, size_t t0,
                          size_t n_tok, float* y, size_t ldy);
  // The tiled attention's inner kernels (never null).
  const AttnKernels* attention;
  // Fast mode over a bf16 cache: dot products of bf16 pairs. Null below avx512bf16; the
  // scalar table holds the reference (tests).
  const AttnBf16Kernels* attention_bf16;
  // Fast mode's unembedding in decode steps: bf16 weights times bf16 pairs. Null below
  // avx512bf16; the scalar table holds the reference (tests).
  const DenseBf16Kernels* dense_bf16;
  // Like matmul for a weight with bf16_lanes (r0 and n_rows multiples of 16): one fp32 FMA
  // chain over k in order per (row, token), whatever the token count, so every path gives
  // matmul_bf16_lanes_reference's bits. Null where a level does not take the layout (the CPU
  // backend repacks the attention projections only for devices whose level has it).
  void (*matmul_bf16_lanes)(const Weight& w, size_t r0, size_t n_rows, const float* x, size_t ldx,
                            size_t n_tok, float* y, size_t ldy);
  // The repack into that layout (repack_bf16_lanes's bytes): tiles [i0, i1) of 16 rows of cols
  // bf16 (cols even) from row-major src into dst. Null exactly where matmul_bf16_lanes is.
  void (*repack_bf16_lanes)(const uint16_t* src, size_t cols, size_t i0, size_t i1, uint16_t* dst);
  // Like matmul_q8_0_q16 for a weight with q8_0_lanes (r0 a multiple of 16; n_rows too, but
  // for the weight's last rows): the same bits (its 16 chains, at every level that has either),
  // read from the layout the upload repacked, so that no call decodes a panel. A level may have
  // this without matmul_q8_0_q16 (avx2, avx512: a Q8_0 matrix left in rows takes fp32 there).
  // Null where a level does not take the layout (the CPU backend repacks a Q8_0 model's
  // attention projections and unembedding in the fast precision for devices whose level has
  // it).
  void (*matmul_q8_0_lanes_q16)(const Weight& w, size_t r0, size_t n_rows, const Q16Acts& x,
                                size_t t0, size_t n_tok, float* y, size_t ldy);
  // The repack into that layout: tiles [i0, i1) of 16 rows of a row-major Q8_0 matrix of `cols`
  // columns from src into dst. Null exactly where matmul_q8_0_lanes_q16 is.
  void (*repack_q8_0_lanes)(const uint8_t* src, size_t cols, size_t i0, size_t i1, uint8_t* dst);
  // Like matmul_mxfp4_q8 (and gemv_mxfp4_q8, whichever the token count) for a weight with
  // mxfp4_lanes (r0 a multiple of 16; n_rows too, but for the weight's last rows): the same
  // bits, read from the layout the upload repacked. Null where a level does not take the layout
  // (the CPU backend repacks the experts in the fast precision for devices whose level has it).
  Int8Matmul matmul_mxfp4_lanes_q8;
  // The repack into that layout: repack_mxfp4_lanes's bytes (the avx512vnni levels' own
  // transpose per block of 16 rows; repack_mxfp4_lanes itself at avx2 and avx512, where a
  // 4x4 dword transpose ran no faster). Null exactly where matmul_mxfp4_lanes_q8 is.
  void (*repack_mxfp4_lanes)(const uint8_t* codes, const uint8_t* scales, size_t cols, size_t i0,
                             size_t i1, uint8_t* dst_codes, uint8_t* dst_scales);
};

// Byte offset in a Q8Acts row of element j (kernel order: j % 32 < 16 even, else odd) of
// block b. (Not for the SIMD translation units, which compute it inline.)
inline size_t q8_pos(size_t b, size_t j) {
  return 128 * (b / 4) + 16 * (b % 4) + (j < 16 ? j : 64 + (j - 16));
}

// The scalar SwiGLU (the table's swiglu at scalar and the avx2 levels).
void swiglu_reference(const float* h, const float* b, size_t n, float limit, float* out);
// The scalar sum_exp (std::exp in double).
double sum_exp_reference(const float* x, size_t n, float shift);

// The scalar definitions of the fast-mode kernels (the reference of the SIMD ones).
void quantize_q8_reference(const float* x, size_t ldx, size_t n_tok, Q8Acts& out);
void matmul_mxfp4_q8_reference(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x,
                               size_t t0, size_t n_tok, float* y, size_t ldy);
// The reference of matmul_q8_0_q8: per block the exact integer sum(w q), times e_b * d_b, summed
// in double.
void matmul_q8_0_q8_reference(const Weight& w, size_t r0, size_t n_rows, const Q8Acts& x, size_t t0,
                              size_t n_tok, float* y, size_t ldy);

// The scalar definitions of the int16 path: the quantizer (the SIMD ones give its bits) and
// the matmul, per block the exact integer sum(w q) times e_b * d_b, summed in double.
void quantize_q16_reference(const float* x, size_t ldx, size_t n_tok, Q16Acts& out);
void matmul_q8_0_q16_reference(const Weight& w, size_t r0, size_t n_rows, const Q16Acts& x,
                               size_t t0, size_t n_tok, float* y, size_t ldy);
// Tiles [i0, i1) of 16 rows of a row-major Q8_0 matrix of `cols` columns into the q8_0_lanes
// layout (Weight::q8_0_lanes): the one repack, a byte shuffle at upload, for every level that
// reads the layout.
void repack_q8_0_lanes(const uint8_t* src, size_t cols, size_t i0, size_t i1, uint8_t* dst);
// Tiles [i0, i1) of 16 rows of a row-major MXFP4 matrix of `cols` columns (codes and their
// scales) into the mxfp4_lanes layout (Weight::mxfp4_lanes, formats.hpp): dst_codes and
// dst_scales are the whole tensor's. The definition of the levels' Kernels::repack_mxfp4_lanes.
void repack_mxfp4_lanes(const uint8_t* codes, const uint8_t* scales, size_t cols, size_t i0,
                        size_t i1, uint8_t* dst_codes, uint8_t* dst_scales);

// Kernels::matmul_bf16_lanes in scalar code (tests): std::fma over k in order.
void matmul_bf16_lanes_reference(const Weight& w, size_t r0, size_t n_rows, const float* x,
                                 size_t ldx, size_t n_tok, float* y, size_t ldy);

// The table of a level (levels.cpp; the level must be supported by the CPU to be called). Off
// x86 every level's table is the scalar one.
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
