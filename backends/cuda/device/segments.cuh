#pragma once
// The matrices of a fused linear (device/../kernels.hpp LinearSegs) as a kernel sees them:
// block b of a launch belongs to segment j when first[j] <= b < first[j + 1].
#include "../kernels.hpp"

namespace gptoss::cuda {

struct SegTable {
  const void* w[3];
  const float* bias[3];
  float* out[3];
  int64_t rows[3];
  int64_t first[4];  // first block of each segment; first[n] = the grid
  int32_t n;
};

// Blocks of `rows_per_block` output rows each.
inline SegTable seg_table(const LinearSegs& s, int64_t rows_per_block) {
  SegTable t{};
  t.n = s.n;
  for (int j = 0; j < s.n; ++j) {
    t.w[j] = s.w[j].data;
    t.bias[j] = s.bias[j];
    t.out[j] = s.out[j];
    t.rows[j] = s.w[j].rows;
    t.first[j + 1] = t.first[j] + (s.w[j].rows + rows_per_block - 1) / rows_per_block;
  }
  return t;
}

#if GPTOSS_GPU_CODE
// The segment of block b and b's index within it.
GPTOSS_DEV int seg_of(const SegTable& t, int64_t b, int64_t* local) {
  int j = 0;
  while (j + 1 < t.n && b >= t.first[j + 1]) ++j;
  *local = b - t.first[j];
  return j;
}
#endif

}  // namespace gptoss::cuda
