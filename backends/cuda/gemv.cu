// Dense linear for few tokens (decode, and every token count in exact precision):
// out[t, n] = sum_k x[t, k] W[n, k] (+ bias[n]), fp32 arithmetic on CUDA cores over bf16 or
// f32 weights. Mirrors ref_linear (cpu_ops.cpp); a token's result does not depend on which
// other tokens share the call (each has its own accumulators, summed in the same order).
#include "device/compat.cuh"
#include "device/rows.cuh"
#include "kernels.hpp"

namespace gptoss::cuda {
namespace {

constexpr int kRowsPerWarp = 4;
constexpr int kWarps = 4;

// One warp per 4 consecutive output rows; lanes take 8 consecutive columns at a time
// (16-byte bf16 / 32-byte f32 loads), striding the row by 8 * warp width; up to NT tokens
// (blockIdx.y picks which NT) share every weight load. Block: 4 warps, 16 rows.
template <typename WT, int NT>
__global__ void __launch_bounds__(kWarps * kWarpSize)
    gemv_kernel(const float* __restrict__ x, const WT* __restrict__ w,
                const float* __restrict__ bias, int64_t n_rows, int64_t k_dim, int64_t n_tok,
                float* __restrict__ out) {
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int64_t row0 = (int64_t(blockIdx.x) * kWarps + warp) * kRowsPerWarp;
  if (row0 >= n_rows) return;  // whole warp; no block-wide barrier follows
  const int64_t t0 = int64_t(blockIdx.y) * NT;
  const int nt = int(min(int64_t(NT), n_tok - t0));
  const WT* wr[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) wr[r] = w + min(row0 + r, n_rows - 1) * k_dim;
  float acc[kRowsPerWarp][NT];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[r][t] = 0.0f;

#pragma unroll 2
  for (int64_t c = int64_t(lane) * 8; c < k_dim; c += int64_t(kWarpSize) * 8) {
    float wv[kRowsPerWarp][8];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) load8(wr[r] + c, wv[r]);
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (t >= nt) break;
      float xv[8];
      load8(x + (t0 + t) * k_dim + c, xv);
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[r][t] += wv[r][i] * xv[i];
    }
  }
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    if (t >= nt) break;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const float v = warp_sum<kWarpSize>(acc[r][t]);
      const int64_t row = row0 + r;
      if (lane == 0 && row < n_rows)
        out[(t0 + t) * n_rows + row] = v + (bias != nullptr ? bias[row] : 0.0f);
    }
  }
}

template <typename WT, int NT>
cudaError_t launch(cudaStream_t s, const float* x, const WT* w, const float* bias, int64_t n_rows,
                   int64_t k_dim, int64_t n_tok, float* out) {
  const int64_t rows_per_block = int64_t(kWarps) * kRowsPerWarp;
  const dim3 grid(unsigned((n_rows + rows_per_block - 1) / rows_per_block),
                  unsigned((n_tok + NT - 1) / NT));
  gemv_kernel<WT, NT><<<grid, kWarps * kWarpSize, 0, s>>>(x, w, bias, n_rows, k_dim, n_tok, out);
  return cudaGetLastError();
}

template <typename WT>
cudaError_t launch_for(cudaStream_t s, const float* x, const WT* w, const float* bias,
                       int64_t n_rows, int64_t k_dim, int64_t n_tok, float* out) {
  if (n_tok == 1) return launch<WT, 1>(s, x, w, bias, n_rows, k_dim, n_tok, out);
  if (n_tok == 2) return launch<WT, 2>(s, x, w, bias, n_rows, k_dim, n_tok, out);
  if (n_tok <= 4) return launch<WT, 4>(s, x, w, bias, n_rows, k_dim, n_tok, out);
  return launch<WT, 8>(s, x, w, bias, n_rows, k_dim, n_tok, out);
}

}  // namespace

cudaError_t launch_gemv(cudaStream_t s, const float* x, DenseView w, const float* bias,
                        int64_t n_tok, float* out) {
  if (n_tok == 0 || w.rows == 0) return cudaSuccess;
  if (w.dt == Dt::bf16)
    return launch_for(s, x, static_cast<const uint16_t*>(w.data), bias, w.rows, w.cols, n_tok, out);
  return launch_for(s, x, static_cast<const float*>(w.data), bias, w.rows, w.cols, n_tok, out);
}

}  // namespace gptoss::cuda
