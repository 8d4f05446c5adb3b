#pragma once
// How the decode GEMVs (one token) walk their rows. A GEMV kernel takes 4 rows at a time so
// they share every load of x. For a weight with one stream per row (bf16, f32) the 4 rows are
// a quarter of the caller's range apart (rows i, i + L, i + 2L, i + 3L), so each core reads 4
// DRAM streams far apart. Measured here (Zen 5 VM, rows of 2880, 2 threads unless noted):
//   - bf16, 96 decode-sized GEMVs: 4 far-apart rows 57 GB/s, one row after the other 49, 4
//     adjacent rows (5.8 KB apart) slower still; one thread: 33 vs 27 GB/s.
//   - MXFP4 rows carry a second stream (their scales), so 4 far-apart rows are 8 streams per
//     core: the model's MoE reads 40-42 GB/s that way against 42-45 with 4 adjacent rows
//     (whose codes and scales are each one contiguous stream). MXFP4 keeps adjacent rows.
// Every row gets the same arithmetic from the 4-row and the 1-row kernel, so results do not
// depend on how the caller split the rows.
#include <cstddef>

namespace gptoss::cpu {
namespace {

// four(i, step) computes rows i + r * step for r < 4; one(i) computes row i alone.
template <typename Four, typename One>
inline void for_each_row_quad(size_t n_rows, bool far_apart, Four&& four, One&& one) {
  if (!far_apart) {
    size_t i = 0;
    for (; i + 4 <= n_rows; i += 4) four(i, size_t(1));
    for (; i < n_rows; ++i) one(i);
    return;
  }
  const size_t L = n_rows / 4;
  for (size_t i = 0; i < L; ++i) four(i, L);
  for (size_t i = 4 * L; i < n_rows; ++i) one(i);
}

}  // namespace
}  // namespace gptoss::cpu
