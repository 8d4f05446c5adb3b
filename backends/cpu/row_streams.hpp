#pragma once
// How the decode GEMVs (one token) walk their rows. A GEMV kernel takes 4 rows at a time so
// they share every load of x, and the 4 rows are a quarter of the caller's range apart (rows
// i, i + L, i + 2L, i + 3L): each core reads 4 DRAM streams far apart (8 for MXFP4, with the
// scales), each prefetched a short distance ahead (1 KiB for bf16, 2 KiB for MXFP4 codes:
// kFarRowsPrefetchBytes in the kernels). Measured here (Zen 5 VM, 2 threads, 20b decode, random A/B of ~1600 calls each):
//   - bf16: 4 far-apart rows against one row after the other: q/o projections -4 to -8%; 4
//     adjacent rows (5.8 KB apart) were the slowest pattern. Prefetch 1 KiB ahead against
//     8 KiB: -9 to -14%.
//   - MXFP4 (int8 fast mode), MoE mlp1 pass: 4 adjacent rows and 8 KiB ahead 886-909 us,
//     4 far-apart rows and 1-2 KiB ahead 676-698 us, 4 adjacent rows and 2 KiB 1071 us; the
//     exact mode's fp32 MXFP4 kernel: -6%. Later, 4-way A/B of the far-row distance (~1200
//     calls each, medians): 1 KiB 650 us, 1.5 KiB 621, 2 KiB 603, 3 KiB 637 (mlp2 pass
//     335/323/311/328); scales 1/8 of it as good as 1/16, better than 1/4. The AVX2 int8 kernels (kernels_avx2_int8_body.hpp)
//     keep 4 adjacent rows and 8 KiB: they are more compute-bound, and far rows with 1 KiB
//     measured 7% slower there (AVX-VNNI on this machine).
// Every row gets the same arithmetic from the 4-row and the 1-row kernel, so results do not
// depend on how the caller split the rows (tested).
#include <cstddef>

namespace gptoss::cpu {
namespace {

// four(i, step) computes rows i + r * step for r < 4; one(i) computes row i alone.
template <typename Four, typename One>
inline void for_each_row_quad(size_t n_rows, Four&& four, One&& one) {
  const size_t L = n_rows / 4;
  for (size_t i = 0; i < L; ++i) four(i, L);
  for (size_t i = 4 * L; i < n_rows; ++i) one(i);
}

}  // namespace
}  // namespace gptoss::cpu
