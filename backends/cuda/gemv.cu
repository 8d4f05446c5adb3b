// Dense linear for few tokens (decode, and every token count in exact precision):
// out[t, n] = sum_k x[t, k] W[n, k] (+ bias[n]), fp32 arithmetic on CUDA cores over bf16 or
// f32 weights. Mirrors ref_linear (cpu_ops.cpp); a token's result does not depend on which
// other tokens share the call (each has its own accumulators, summed in the same order).
#include <cstdlib>
#include <cstring>

#include "device/compat.cuh"
#include "device/rows.cuh"
#include "device/segments.cuh"
#include "kernels.hpp"

namespace gptoss::cuda {
namespace {

constexpr int kRowsPerWarp = 4;
constexpr int kWarps = 4;

// One warp (of W lanes: device/compat.cuh, logical warps) per 4 consecutive output rows;
// lanes take 8 consecutive columns at a time (16-byte bf16 / 32-byte f32 loads), striding
// the row by 8 * W; up to NT tokens (blockIdx.y picks which NT) share every weight load.
// Block: 4 warps, 16 rows of one of the call's matrices (Q, K, V fused: seg_table).
template <typename WT, int NT, int W>
__global__ void __launch_bounds__(kWarps* W)
    gemv_kernel(const float* __restrict__ x, SegTable segs, int64_t k_dim, int64_t n_tok) {
  __shared__ float pair[kMaxBlockWarps];
  const int warp = threadIdx.x / W, lane = threadIdx.x % W;
  int64_t local;
  const int sg = seg_of(segs, blockIdx.x, &local);
  const WT* __restrict__ w = static_cast<const WT*>(segs.w[sg]);
  const float* __restrict__ bias = segs.bias[sg];
  float* __restrict__ out = segs.out[sg];
  const int64_t n_rows = segs.rows[sg];
  const int64_t row0 = (local * kWarps + warp) * kRowsPerWarp;
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

  if (k_dim % 8 == 0) {
#pragma unroll 2
    for (int64_t c = int64_t(lane) * 8; c < k_dim; c += int64_t(W) * 8) {
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
  } else {  // rows of any length (never a real model's): one element at a time
    for (int64_t c = lane; c < k_dim; c += W) {
      float wv[kRowsPerWarp];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) wv[r] = load1(wr[r] + c);
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        if (t >= nt) break;
        const float xv = x[(t0 + t) * k_dim + c];
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) acc[r][t] += wv[r] * xv;
      }
    }
  }
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    if (t >= nt) break;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const float v = group_sum<W>(acc[r][t], pair);
      const int64_t row = row0 + r;
      if (lane == 0 && row < n_rows) out[(t0 + t) * n_rows + row] = v + (bias != nullptr ? bias[row] : 0.0f);
    }
  }
}

template <typename WT, int NT>
cudaError_t launch(cudaStream_t s, const float* x, const LinearSegs& segs, int64_t n_tok) {
  const SegTable t = seg_table(segs, int64_t(kWarps) * kRowsPerWarp);
  const dim3 grid(unsigned(t.first[t.n]), unsigned((n_tok + NT - 1) / NT));
  return with_warp_width([&](auto width) {
    constexpr int W = decltype(width)::value;
    gemv_kernel<WT, NT, W><<<grid, kWarps * W, 0, s>>>(x, t, segs.w[0].cols, n_tok);
    return cudaGetLastError();
  });
}

template <typename WT>
cudaError_t launch_for(cudaStream_t s, const float* x, const LinearSegs& segs, int64_t n_tok) {
  if (n_tok == 1) return launch<WT, 1>(s, x, segs, n_tok);
  if (n_tok == 2) return launch<WT, 2>(s, x, segs, n_tok);
  if (n_tok <= 4) return launch<WT, 4>(s, x, segs, n_tok);
  return launch<WT, 8>(s, x, segs, n_tok);
}

}  // namespace

bool wave64_emulation() {
#if defined(GPTOSS_HIP)
  return false;  // the wavefronts are 64 lanes already
#else
  static const bool on = [] {
    const char* v = std::getenv("GPTOSS_CUDA_WAVE64");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
#endif
}

cudaError_t launch_gemv(cudaStream_t s, const float* x, const LinearSegs& segs, int64_t n_tok) {
  if (n_tok == 0) return cudaSuccess;
  for (int j = 1; j < segs.n; ++j)
    if (segs.w[j].dt != segs.w[0].dt || segs.w[j].cols != segs.w[0].cols) return cudaErrorInvalidValue;
  return segs.w[0].dt == Dt::bf16 ? launch_for<uint16_t>(s, x, segs, n_tok)
                                  : launch_for<float>(s, x, segs, n_tok);
}

}  // namespace gptoss::cuda
