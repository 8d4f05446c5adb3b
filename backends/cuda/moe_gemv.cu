// MXFP4 MoE for few tokens per expert (decode; and every step in exact precision): one
// launch per projection covers all selected experts of all tokens, each expert's weights
// read once per tile of up to kMoeGemvTile of its tokens (tokens grouped by moe_group.cu).
//
//   stage 1: h = mlp1[e] x + b1[e] (2I rows, glu/linear interleaved), act = clamped SwiGLU;
//   stage 2: y = mlp2[e] act + b2[e];                then moe_combine: out[t] = sum_j w_tj y_tj.
//
// Two arithmetics, mirroring the CPU backend's two modes (ops_moe.cpp / cpu_ops.cpp ref_moe):
//   fast:  activations quantized to int8 per 32-block (d = max|x| / 127, as llama.cpp's Q8),
//          E2M1 codes turned into int8 (2v) by byte permutes in registers, dp4a dot products,
//          one float multiply-add per 32-block with scale * d / 2. Stage 1 quantizes its
//          SwiGLU output in its epilogue, 32 units per block, so stage 2 reads int8 too.
//          Not decode-to-float + FMA: a token reads each weight once, so instructions per
//          weight bound the GEMV near peak bandwidth (the estimate: docs/backends.md).
//   exact: fp32 activations, weights decoded to fp32 (exactly: v * 2^(e-127)), FMA.
#include <cmath>

#include "device/compat.cuh"
#include "device/formats.cuh"
#include "device/moe_routing.cuh"
#include "device/rows.cuh"
#include "kernels.hpp"

namespace gptoss::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kRowsPerWarp = 8;
constexpr int kRowsPerBlock = kWarps * kRowsPerWarp;  // 64: 32 SwiGLU units, one q8 block

__device__ float swiglu(float glu, float lin, float limit) {
  glu = fminf(glu, limit);
  lin = fminf(fmaxf(lin, -limit), limit);
  return glu / (1.0f + expf(-1.702f * glu)) * (lin + 1.0f);
}

// The tile's assignments and the activation row each reads (stage 1: the token, a / top_k;
// stage 2: the assignment itself).
template <int kTile>
struct TileRows {
  int count;
  int32_t assign[kTile];
  int32_t act_row[kTile];  // rows of activations: tokens or assignments (< 2^31)
};

template <int kTile>
__device__ TileRows<kTile> tile_rows(const MoeRouting& routing, const MoeTile& tile, int act_div) {
  TileRows<kTile> tr;
  tr.count = tile.count;
#pragma unroll
  for (int t = 0; t < kTile; ++t) {
    const int32_t a = routing.order[tile.begin + min(t, tile.count - 1)];
    tr.assign[t] = a;
    tr.act_row[t] = a / act_div;
  }
  return tr;
}

// Quantizes 32 values held by lanes 0..31 of a warp of W lanes (lanes beyond 32, as in a
// 64-lane wavefront, hold 0 and store nothing) into q[0..32) and *d.
template <int W>
__device__ void quantize_block32(float v, int lane, int8_t* q, float* d, float* pair) {
  const float amax = group_max<W>(fabsf(v), pair);
  const float dd = amax / 127.0f;
  const float id = q8_inverse_scale(dd);
  if (lane < kQ8Block) q[lane] = int8_t(fminf(fmaxf(rintf(v * id), -127.0f), 127.0f));
  if (lane == 0) *d = dd;
}

// Half-block `half` of block b of weight row `row` (of all experts' rows): its 16 codes as
// int8 (2v) in q[0..3], in element order; returns the block's scale.
__device__ float load_half_block(const Mxfp4View& w, int64_t row, int64_t b, int64_t half, uint32_t q[4]) {
  const uint2 c = *reinterpret_cast<const uint2*>(w.codes + row * (w.cols / 2) + b * 16 + half * 8);
  e2m1x8_to_i8x8(c.x, q);
  e2m1x8_to_i8x8(c.y, q + 2);
  return e8m0_to_f32(w.scales[row * (w.cols / 32) + b]);
}

// The warp's R row sums per token (times `factor`) plus the expert's bias: stage 1 keeps them
// in h[h_row0 + r] (lane 0), stage 2 writes out[assignment, row].
template <bool kStage1, int W, int R, int kTile>
__device__ void finish_rows(float (&acc)[R][kTile], float factor, const TileRows<kTile>& tr, int32_t expert,
                            int64_t row0, int64_t n_rows, const float* bias, float (*h)[kTile], int h_row0,
                            float* out, int lane, float* pair) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t row = row0 + r;
    const float b = bias != nullptr && row < n_rows ? bias[int64_t(expert) * n_rows + row] : 0.0f;
#pragma unroll
    for (int t = 0; t < kTile; ++t) {
      const float v = factor * group_sum<W>(acc[r][t], pair) + b;
      if (kStage1) {
        if (lane == 0) h[h_row0 + r][t] = v;
      } else if (lane == 0 && t < tr.count && row < n_rows) {
        out[int64_t(tr.assign[t]) * n_rows + row] = v;
      }
    }
  }
}

// ---- fast: int8 activations x MXFP4 weights --------------------------------------------

// One warp (W lanes: device/compat.cuh, logical warps) per 8 rows of one expert; lanes take
// half-blocks (16 elements: 8 bytes of codes and the block's scale) at a time, striding the
// row; the tile's tokens share every weight load. Block: 8 warps = 64 rows; grid (rows / 64,
// tiles). kTile: the routing's tile_m.
template <bool kStage1, int kTile, int W>
__global__ void __launch_bounds__(kWarps* W, 64 / W)
    moe_q8_kernel(const int8_t* __restrict__ xq, const float* __restrict__ xd, int act_div, Mxfp4View w,
                  const float* __restrict__ bias, MoeRouting routing, float limit, int8_t* __restrict__ act_q,
                  float* __restrict__ act_d, float* __restrict__ y) {
  __shared__ float h[kRowsPerBlock][kTile];
  __shared__ float pair[kMaxBlockWarps];
  MoeTile tile;
  if (!moe_find_tile(routing, int32_t(blockIdx.y), tile)) return;
  const TileRows<kTile> tr = tile_rows<kTile>(routing, tile, act_div);
  const int warp = threadIdx.x / W, lane = threadIdx.x % W;
  const int64_t n_rows = w.rows, k_dim = w.cols, n_blocks = k_dim / 32;
  const int64_t row0 = int64_t(blockIdx.x) * kRowsPerBlock + warp * kRowsPerWarp;
  const int64_t expert_row0 = int64_t(tile.expert) * n_rows;

  float acc[kRowsPerWarp][kTile];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
    for (int t = 0; t < kTile; ++t) acc[r][t] = 0.0f;

  for (int64_t hb = lane; hb < 2 * n_blocks; hb += W) {
    const int64_t b = hb >> 1, half = hb & 1;
    uint4 xv[kTile];
    float xs[kTile];
#pragma unroll
    for (int t = 0; t < kTile; ++t) {
      if (t >= tr.count) break;
      xv[t] = *reinterpret_cast<const uint4*>(xq + tr.act_row[t] * k_dim + b * 32 + half * 16);
      xs[t] = xd[tr.act_row[t] * n_blocks + b];
    }
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      uint32_t q[4];
      const float ws = load_half_block(w, expert_row0 + min(row0 + r, n_rows - 1), b, half, q);
#pragma unroll
      for (int t = 0; t < kTile; ++t) {
        if (t >= tr.count) break;
        int32_t s = dot4_i8(q[0], xv[t].x, 0);
        s = dot4_i8(q[1], xv[t].y, s);
        s = dot4_i8(q[2], xv[t].z, s);
        s = dot4_i8(q[3], xv[t].w, s);
        acc[r][t] += float(s) * (ws * xs[t]);
      }
    }
  }
  // Row sums (x 1/2: the codes were 2v) plus bias; stage 2 ends here.
  finish_rows<kStage1, W>(acc, 0.5f, tr, tile.expert, row0, n_rows, bias, h, warp * kRowsPerWarp, y, lane,
                          pair);
  if (!kStage1) return;
  // Stage 1 epilogue: the block's 64 rows are 32 SwiGLU units = one q8 block of act. Warp t
  // takes token t; lane u unit u.
  __syncthreads();
  const int64_t n_units = n_rows / 2, unit_block = blockIdx.x;
  for (int t = warp; t < tr.count; t += kWarps) {
    const int u = lane < kQ8Block ? lane : 0;
    const float v = lane < kQ8Block ? swiglu(h[2 * u][t], h[2 * u + 1][t], limit) : 0.0f;
    const int64_t a = tr.assign[t];
    quantize_block32<W>(v, lane, act_q + a * n_units + unit_block * kQ8Block,
                        act_d + a * (n_units / kQ8Block) + unit_block, pair);
  }
}

// Rows of x (f32, [n, k]) quantized per 32-block: one warp of W lanes per block.
template <int W>
__global__ void quantize_q8_kernel(const float* __restrict__ x, int64_t n, int64_t k, int8_t* __restrict__ q,
                                   float* __restrict__ d) {
  __shared__ float pair[kMaxBlockWarps];
  const int lane = threadIdx.x % W;
  const int64_t item = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / W;
  const int64_t blocks = k / kQ8Block;
  if (item >= n * blocks) return;  // whole warp
  const int64_t row = item / blocks, b = item % blocks;
  const float v = lane < kQ8Block ? x[row * k + b * kQ8Block + lane] : 0.0f;
  quantize_block32<W>(v, lane, q + row * k + b * kQ8Block, d + row * blocks + b, pair);
}

// ---- exact: fp32 activations x MXFP4 weights decoded to fp32 --------------------------

constexpr int kExactRowsPerWarp = 4;
constexpr int kExactRowsPerBlock = kWarps * kExactRowsPerWarp;  // 32: pairs stay together

// One warp (W lanes) per 4 rows of one expert; lanes take half-blocks as above, the weights
// decoded to fp32 (2v * (scale / 2), exact) and multiplied with fp32 activations (L1-cached
// loads). Block: 8 warps = 32 rows; grid (rows / 32, tiles). kTile: the routing's tile_m.
template <bool kStage1, int kTile, int W>
__global__ void __launch_bounds__(kWarps* W, 64 / W)
    moe_f32_kernel(const float* __restrict__ x, int act_div, Mxfp4View w, const float* __restrict__ bias,
                   MoeRouting routing, float limit, float* __restrict__ out) {
  __shared__ float h[kExactRowsPerBlock][kTile];
  __shared__ float pair[kMaxBlockWarps];
  MoeTile tile;
  if (!moe_find_tile(routing, int32_t(blockIdx.y), tile)) return;
  const TileRows<kTile> tr = tile_rows<kTile>(routing, tile, act_div);
  const int warp = threadIdx.x / W, lane = threadIdx.x % W;
  const int64_t n_rows = w.rows, k_dim = w.cols, n_blocks = k_dim / 32;
  const int64_t row0 = int64_t(blockIdx.x) * kExactRowsPerBlock + warp * kExactRowsPerWarp;
  const int64_t expert_row0 = int64_t(tile.expert) * n_rows;

  float acc[kExactRowsPerWarp][kTile];
#pragma unroll
  for (int r = 0; r < kExactRowsPerWarp; ++r)
#pragma unroll
    for (int t = 0; t < kTile; ++t) acc[r][t] = 0.0f;

  for (int64_t hb = lane; hb < 2 * n_blocks; hb += W) {
    const int64_t b = hb >> 1, half = hb & 1, col = b * 32 + half * 16;
#pragma unroll
    for (int r = 0; r < kExactRowsPerWarp; ++r) {
      uint32_t q[4];
      const float s = 0.5f * load_half_block(w, expert_row0 + min(row0 + r, n_rows - 1), b, half, q);
      float wv[16];
#pragma unroll
      for (int i = 0; i < 16; ++i) wv[i] = float(i8_at(q[i / 4], i % 4)) * s;
#pragma unroll
      for (int t = 0; t < kTile; ++t) {
        if (t >= tr.count) break;
        float xv[16];
        load8(x + tr.act_row[t] * k_dim + col, xv);
        load8(x + tr.act_row[t] * k_dim + col + 8, xv + 8);
#pragma unroll
        for (int i = 0; i < 16; ++i) acc[r][t] += wv[i] * xv[i];
      }
    }
  }
  finish_rows<kStage1, W>(acc, 1.0f, tr, tile.expert, row0, n_rows, bias, h, warp * kExactRowsPerWarp, out,
                          lane, pair);
  if (!kStage1) return;
  __syncthreads();
  const int64_t n_units = n_rows / 2, unit0 = int64_t(blockIdx.x) * (kExactRowsPerBlock / 2);
  for (int i = threadIdx.x; i < tr.count * (kExactRowsPerBlock / 2); i += blockDim.x) {
    const int t = i / (kExactRowsPerBlock / 2), u = i % (kExactRowsPerBlock / 2);
    if (unit0 + u < n_units)
      out[int64_t(tr.assign[t]) * n_units + unit0 + u] = swiglu(h[2 * u][t], h[2 * u + 1][t], limit);
  }
}

// One thread per (token, output element): the top_k expert outputs summed in order with
// their router weights (as ref_moe); experts outside the weights' slice add nothing.
__global__ void moe_combine_kernel(const float* __restrict__ y, const int32_t* __restrict__ ids,
                                   const float* __restrict__ weights, int64_t n, int top_k, int64_t dim,
                                   int32_t first_expert, int32_t experts, float* __restrict__ out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * dim) return;
  const int64_t t = i / dim, r = i % dim;
  float o = 0.0f;
  for (int j = 0; j < top_k; ++j) {
    const int64_t a = t * top_k + j;
    const int32_t e = ids[a] - first_expert;
    if (e >= 0 && e < experts) o += weights[a] * y[a * dim + r];
  }
  out[i] = o;
}

}  // namespace

cudaError_t launch_quantize_q8(cudaStream_t s, const float* x, int64_t n, int64_t k, int8_t* q, float* d) {
  const int64_t warps = n * (k / kQ8Block);
  if (warps == 0) return cudaSuccess;
  const int per_block = 8;
  return with_warp_width([&](auto width) {
    constexpr int W = decltype(width)::value;
    quantize_q8_kernel<W>
        <<<unsigned((warps + per_block - 1) / per_block), per_block * W, 0, s>>>(x, n, k, q, d);
    return cudaGetLastError();
  });
}

cudaError_t launch_moe_q8(cudaStream_t s, bool stage1, const int8_t* xq, const float* xd, int act_div,
                          Mxfp4View w, const float* bias, const MoeRouting& routing, int64_t max_tiles,
                          float limit, int8_t* act_q, float* act_d, float* y) {
  if (max_tiles == 0) return cudaSuccess;
  if ((stage1 && w.rows % kRowsPerBlock != 0) || (routing.tile_m != 1 && routing.tile_m != kMoeGemvTile))
    return cudaErrorInvalidValue;
  const dim3 grid(unsigned((w.rows + kRowsPerBlock - 1) / kRowsPerBlock), unsigned(max_tiles));
  const bool one = routing.tile_m == 1;
  return with_warp_width([&](auto width) {
    constexpr int W = decltype(width)::value;
    const dim3 block(kWarps * W);
    if (stage1 && one)
      moe_q8_kernel<true, 1, W>
          <<<grid, block, 0, s>>>(xq, xd, act_div, w, bias, routing, limit, act_q, act_d, y);
    else if (stage1)
      moe_q8_kernel<true, kMoeGemvTile, W>
          <<<grid, block, 0, s>>>(xq, xd, act_div, w, bias, routing, limit, act_q, act_d, y);
    else if (one)
      moe_q8_kernel<false, 1, W>
          <<<grid, block, 0, s>>>(xq, xd, act_div, w, bias, routing, limit, act_q, act_d, y);
    else
      moe_q8_kernel<false, kMoeGemvTile, W>
          <<<grid, block, 0, s>>>(xq, xd, act_div, w, bias, routing, limit, act_q, act_d, y);
    return cudaGetLastError();
  });
}

cudaError_t launch_moe_f32(cudaStream_t s, bool stage1, const float* x, int act_div, Mxfp4View w,
                           const float* bias, const MoeRouting& routing, int64_t max_tiles, float limit,
                           float* out) {
  if (max_tiles == 0) return cudaSuccess;
  if ((stage1 && w.rows % 2 != 0) || (routing.tile_m != 1 && routing.tile_m != kMoeGemvTile))
    return cudaErrorInvalidValue;
  const dim3 grid(unsigned((w.rows + kExactRowsPerBlock - 1) / kExactRowsPerBlock), unsigned(max_tiles));
  const bool one = routing.tile_m == 1;
  return with_warp_width([&](auto width) {
    constexpr int W = decltype(width)::value;
    const dim3 block(kWarps * W);
    if (stage1 && one)
      moe_f32_kernel<true, 1, W><<<grid, block, 0, s>>>(x, act_div, w, bias, routing, limit, out);
    else if (stage1)
      moe_f32_kernel<true, kMoeGemvTile, W><<<grid, block, 0, s>>>(x, act_div, w, bias, routing, limit, out);
    else if (one)
      moe_f32_kernel<false, 1, W><<<grid, block, 0, s>>>(x, act_div, w, bias, routing, limit, out);
    else
      moe_f32_kernel<false, kMoeGemvTile, W><<<grid, block, 0, s>>>(x, act_div, w, bias, routing, limit, out);
    return cudaGetLastError();
  });
}

cudaError_t launch_moe_combine(cudaStream_t s, const float* y, const int32_t* ids, const float* weights,
                               int64_t n, int top_k, int64_t dim, int32_t first_expert, int32_t experts,
                               float* out) {
  if (n == 0) return cudaSuccess;
  const int64_t total = n * dim;
  moe_combine_kernel<<<unsigned((total + 255) / 256), 256, 0, s>>>(y, ids, weights, n, top_k, dim,
                                                                   first_expert, experts, out);
  return cudaGetLastError();
}

}  // namespace gptoss::cuda
