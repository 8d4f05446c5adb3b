#pragma once
// The tensor-core unit of the GPU kernels, isolated so that another matrix unit (MFMA on
// CDNA) can sit beside it with the same interface: a warp multiplies a 16x16 bf16
// tile A (row-major, K contiguous) by a 16x8 bf16 tile B (stored as 8 rows of 16 K values,
// i.e. the weight matrix's own row-major layout) into a 16x8 fp32 accumulator.
//
// The HIP build's counterpart, namespace mfma below: a wavefront multiplies a 16x16 A tile by
// a 16x16 B tile (16 rows of 16 K values) into a 16x16 fp32 accumulator with
// v_mfma_f32_16x16x16bf16_1k (CDNA2 and later).
//
// mma.sync.m16n8k16 (sm_80 and later). Fragments, with g = lane / 4 and c = lane % 4 (PTX ISA,
// "Matrix Fragments for mma.m16n8k16 with floating point type"); bf16 pairs are consecutive
// K values, the lower K in the low half:
//   A: a[0] = A[g][2c, 2c+1]   a[1] = A[g+8][2c, 2c+1]   a[2] = A[g][2c+8, +9]   a[3] = A[g+8][2c+8, +9]
//   B: b[0] = B[k = 2c, 2c+1][n = g]                       b[1] = B[k = 2c+8, +9][n = g]
//   C: c[0] = C[g][2c]  c[1] = C[g][2c+1]  c[2] = C[g+8][2c]  c[3] = C[g+8][2c+1]
// The coordinate functions below state the same table in code; they are host-testable and
// tests/backends/cuda/plan_test.cpp checks them against worked examples and that they cover
// each tile once.
#include "compat.cuh"

namespace gptoss::cuda::mma {

struct Coord {
  int row;
  int col;
};

// Element (row, first of two K columns) of A register r (0..3) on `lane`.
GPTOSS_HD Coord a_coord(int lane, int r) { return {lane / 4 + 8 * (r & 1), 2 * (lane % 4) + 8 * (r >> 1)}; }
// (first of two K rows, column n) of B register r (0..1) on `lane`.
GPTOSS_HD Coord b_coord(int lane, int r) { return {2 * (lane % 4) + 8 * r, lane / 4}; }
// (row, column) of accumulator i (0..3) on `lane`.
GPTOSS_HD Coord c_coord(int lane, int i) { return {lane / 4 + 8 * (i >> 1), 2 * (lane % 4) + (i & 1)}; }

#if GPTOSS_GPU_CODE && !defined(GPTOSS_HIP)
// c += A B for one m16n8k16 tile.
GPTOSS_DEV void mma_bf16_16x8x16(float c[4], const uint32_t a[4], const uint32_t b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  (void)c, (void)a, (void)b;
  __trap();  // not built for these architectures (CMAKE_CUDA_ARCHITECTURES >= 80)
#endif
}

// The A fragment of the 16x16 tile at `tile` in shared memory (row-major bf16, `stride`
// elements between rows; 4-byte aligned pairs).
GPTOSS_DEV void load_a(uint32_t a[4], const uint16_t* tile, int stride, int lane) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const Coord p = a_coord(lane, r);
    a[r] = *reinterpret_cast<const uint32_t*>(tile + p.row * stride + p.col);
  }
}

// The B fragment of the 8 (N) x 16 (K) tile at `tile` in shared memory (row n holds its K
// values contiguously, `stride` elements between rows).
GPTOSS_DEV void load_b(uint32_t b[2], const uint16_t* tile, int stride, int lane) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const Coord p = b_coord(lane, r);
    b[r] = *reinterpret_cast<const uint32_t*>(tile + p.col * stride + p.row);
  }
}
#endif

}  // namespace gptoss::cuda::mma

// ---- CDNA: v_mfma_f32_16x16x16bf16_1k (the HIP build) --------------------------------------
// Fragments, with r = lane % 16 and q = lane / 16 (64 lanes), v = 0..3 (AMD's matrix
// instruction calculator for CDNA2: each lane holds four consecutive K values of one A row
// and of one B column, and four consecutive rows of one C column):
//   A: a[v] = A[r][4q + v]     B: b[v] = B[k = 4q + v][n = r]     C: c[v] = C[4q + v][r]
// Compiled, never executed: the HIP build uses it only with GPTOSS_HIP_MFMA=1 (kernels.hpp)
// until an MI250 has run backend-ops through it.
namespace gptoss::cuda::mfma {

using mma::Coord;

// Element (row, K column) of A value v (0..3) on `lane`.
GPTOSS_HD Coord a_coord(int lane, int v) { return {lane % 16, 4 * (lane / 16) + v}; }
// (K row, column n) of B value v.
GPTOSS_HD Coord b_coord(int lane, int v) { return {4 * (lane / 16) + v, lane % 16}; }
// (row, column) of accumulator v.
GPTOSS_HD Coord c_coord(int lane, int v) { return {4 * (lane / 16) + v, lane % 16}; }

#if GPTOSS_GPU_CODE && defined(GPTOSS_HIP)
typedef short Frag __attribute__((ext_vector_type(4)));  // four bf16, the lower K first
typedef float Acc __attribute__((ext_vector_type(4)));

// c += A B for one 16x16x16 tile.
GPTOSS_DEV void mma_bf16_16x16x16(float c[4], Frag a, Frag b) {
  Acc acc = {c[0], c[1], c[2], c[3]};
  acc = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, acc, 0, 0, 0);
#pragma unroll
  for (int v = 0; v < 4; ++v) c[v] = acc[v];
}

// The A fragment of the 16x16 tile at `tile` in shared memory (row-major bf16, `stride`
// elements between rows; 8-byte aligned groups of four).
GPTOSS_DEV Frag load_a(const uint16_t* tile, int stride, int lane) {
  const Coord p = a_coord(lane, 0);
  return *reinterpret_cast<const Frag*>(tile + p.row * stride + p.col);
}

// The B fragment of the 16 (N) x 16 (K) tile at `tile` in shared memory (row n holds its K
// values contiguously).
GPTOSS_DEV Frag load_b(const uint16_t* tile, int stride, int lane) {
  const Coord p = b_coord(lane, 0);
  return *reinterpret_cast<const Frag*>(tile + p.col * stride + p.row);
}
#endif

}  // namespace gptoss::cuda::mfma
