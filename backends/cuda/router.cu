// The MoE router: logits = W x + b over the experts, the top k (ties: lower index first) and
// the softmax over those k logits. Mirrors ref_router (cpu_ops.cpp).
#include <cmath>

#include "device/compat.cuh"
#include "device/rows.cuh"
#include "kernels.hpp"

namespace gptoss::cuda {
namespace {

constexpr int kRouterThreads = 256;

// One block per token: warp w (of W lanes: device/compat.cuh, logical warps) computes the
// logits of experts w, w + warps, ... (lanes take 8 consecutive columns at a time, then a
// warp sum); then warp 0 picks the top k from the logits in shared memory, each lane holding
// experts lane, lane + W, ... (lanes without an expert hold -inf and no index).
template <int W>
__global__ void router_kernel(const float* __restrict__ x, DenseView w, const float* __restrict__ bias,
                              int top_k, int32_t* __restrict__ ids, float* __restrict__ weights) {
  extern __shared__ float logits[];  // [w.rows]
  __shared__ float pair[kMaxBlockWarps];
  __shared__ ArgMax pair_best[kMaxBlockWarps];
  const int64_t t = blockIdx.x;
  const int64_t dim = w.cols;
  const int n_experts = int(w.rows);
  const int warp = threadIdx.x / W, lane = threadIdx.x % W;
  const int n_warps = blockDim.x / W;
  const float* xr = x + t * dim;
  for (int e = warp; e < n_experts; e += n_warps) {
    float acc = 0.0f;
    if (dim % 8 == 0) {
      for (int64_t c = int64_t(lane) * 8; c < dim; c += int64_t(W) * 8) {
        float wv[8], xv[8];
        load8(w, e, c, wv);
        load8(xr + c, xv);
#pragma unroll
        for (int i = 0; i < 8; ++i) acc += xv[i] * wv[i];
      }
    } else {  // rows of any length (never a real model's)
      for (int64_t c = lane; c < dim; c += W) acc += xr[c] * load1(w, e, c);
    }
    acc = group_sum<W>(acc, pair);
    if (lane == 0) logits[e] = acc + (bias != nullptr ? bias[e] : 0.0f);
  }
  __syncthreads();
  if (warp != 0) return;
  // Selection: k rounds of a warp argmax over the experts not yet taken.
  float top_value[kMaxTopK];
  int32_t top_id[kMaxTopK];
  for (int k = 0; k < top_k; ++k) {
    float best = -INFINITY;
    int32_t best_id = INT32_MAX;
    for (int e = lane; e < n_experts; e += W) {
      bool taken = false;
      for (int j = 0; j < k; ++j) taken |= top_id[j] == e;
      const float v = logits[e];
      if (!taken && (v > best || (v == best && e < best_id) || best_id == INT32_MAX)) {
        best = v;
        best_id = e;
      }
    }
    group_argmax<W>(best, best_id, pair_best);
    top_value[k] = best;
    top_id[k] = best_id;
  }
  // Softmax over the k logits, summed in order as the reference does.
  if (lane == 0) {
    const float m = top_value[0];
    float sum = 0.0f;
    for (int k = 0; k < top_k; ++k) sum += expf(top_value[k] - m);
    for (int k = 0; k < top_k; ++k) {
      ids[t * top_k + k] = top_id[k];
      weights[t * top_k + k] = expf(top_value[k] - m) / sum;
    }
  }
}

}  // namespace

cudaError_t launch_router(cudaStream_t s, const float* x, DenseView w, const float* bias, int64_t n,
                          int top_k, int32_t* ids, float* weights) {
  if (n == 0) return cudaSuccess;
  if (top_k < 1 || top_k > kMaxTopK || top_k > w.rows || w.rows > kMaxExperts) return cudaErrorInvalidValue;
  return with_warp_width([&](auto width) {
    router_kernel<decltype(width)::value>
        <<<unsigned(n), kRouterThreads, size_t(w.rows) * sizeof(float), s>>>(x, w, bias, top_k, ids, weights);
    return cudaGetLastError();
  });
}

}  // namespace gptoss::cuda
