// Row-wise and elementwise kernels: embedding gather, RMSNorm (+ residual), add, YaRN RoPE,
// KV-cache write. Mirrors cpu_ops.cpp (ref_embedding, ref_rmsnorm, ref_rope, ref_kv_write).
#include <algorithm>

#include "device/compat.cuh"
#include "device/formats.cuh"
#include "device/rows.cuh"
#include "kernels.hpp"

namespace gptoss::cuda {
namespace {

__device__ void report(DeviceError* err, int32_t code, int64_t value, int64_t limit) {
  if (err != nullptr && atomicCAS(&err->code, 0, code) == 0) {
    err->value = value;
    err->limit = limit;
  }
}

template <typename T>
__device__ void store_elem(T* p, float v) {
  if constexpr (sizeof(T) == 2)
    *p = f32_to_bf16(v);
  else
    *p = v;
}

// One block per token; threads take 8 consecutive elements at a time.
__global__ void embedding_kernel(DenseView table, const int32_t* __restrict__ tokens, float* __restrict__ out,
                                 DeviceError* err) {
  const int64_t t = blockIdx.x;
  const int32_t id = tokens[t];
  float* o = out + t * table.cols;
  const bool ok = id >= 0 && id < table.rows;
  if (!ok && threadIdx.x == 0) report(err, kErrTokenId, id, table.rows);
  if (table.cols % 8 != 0) {  // rows of any length (never a real model's)
    for (int64_t c = threadIdx.x; c < table.cols; c += blockDim.x) o[c] = ok ? load1(table, id, c) : 0.0f;
    return;
  }
  for (int64_t c = int64_t(threadIdx.x) * 8; c < table.cols; c += int64_t(blockDim.x) * 8) {
    float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (ok) load8(table, id, c, v);
    store8(o + c, v);
  }
}

// Sum of v over the block (blockDim.x a multiple of the warp width, <= 32 warps); every
// thread gets it. `shared` holds one float per warp.
__device__ float block_sum(float v, float* shared) {
  v = warp_sum<kWarpSize>(v);
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int n_warps = blockDim.x / kWarpSize;
  __syncthreads();  // `shared` may still be read from a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float s = lane < n_warps ? shared[lane] : 0.0f;
  return warp_sum<kWarpSize>(s);
}

// One block per token row; threads stride over the row, the sum of squares reduced warp by
// warp then across warps. fp32 throughout, the formula of ref_rmsnorm. out may be x.
__global__ void rmsnorm_kernel(float* x, const float* __restrict__ residual, const float* __restrict__ scale,
                               int64_t dim, float eps, float* out) {
  __shared__ float partial[32];
  float* xr = x + int64_t(blockIdx.x) * dim;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
    float v = xr[i];
    if (residual != nullptr) {
      v += residual[int64_t(blockIdx.x) * dim + i];
      xr[i] = v;  // the thread that reads an element also writes it: no race
    }
    ss += v * v;
  }
  ss = block_sum(ss, partial);
  const float r = 1.0f / sqrtf(ss / float(dim) + eps);
  float* o = out + int64_t(blockIdx.x) * dim;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) o[i] = xr[i] * r * scale[i];
}

// A grid-stride loop over n elements.
__global__ void add_kernel(float* __restrict__ x, const float* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] += y[i];
}

// The cos/sin of every frequency at `position` into shared cs, sn: in double, as the
// reference computes them, rounded to float once. Ends with a barrier.
__device__ void rope_cos_sin(const RopeTable& table, int32_t position, float* cs, float* sn) {
  const double pos = double(position);
  for (int i = threadIdx.x; i < table.half; i += blockDim.x) {
    double s, c;
    sincos(pos * table.inv_freq[i], &s, &c);
    cs[i] = float(c * table.concentration);
    sn[i] = float(s * table.concentration);
  }
  __syncthreads();
}

// One block per token: each frequency's cos/sin once, then every (head, pair) of the token
// rotated by one thread.
__global__ void rope_kernel(float* __restrict__ x, const int32_t* __restrict__ positions, int64_t n_heads,
                            RopeTable table) {
  __shared__ float cs[kMaxRopeHalf], sn[kMaxRopeHalf];
  const int half = table.half;
  rope_cos_sin(table, positions[blockIdx.x], cs, sn);
  float* row = x + int64_t(blockIdx.x) * n_heads * 2 * half;
  for (int64_t p = threadIdx.x; p < n_heads * half; p += blockDim.x) {
    const int64_t h = p / half;
    const int i = int(p % half);
    float* v = row + h * 2 * half;
    const float x1 = v[i], x2 = v[i + half];
    v[i] = x1 * cs[i] - x2 * sn[i];
    v[i + half] = x2 * cs[i] + x1 * sn[i];
  }
}

// RoPE of q (in place) and k, and the KV write, fused: one block per token; the frequencies'
// cos/sin once, then each (head, pair) of q and of k by one thread, k's rotated pair stored
// straight into the cache with v. The same arithmetic as rope_kernel + kv_write_kernel.
template <typename T>
__global__ void rope_kv_write_kernel(float* __restrict__ q, const float* __restrict__ k,
                                     const float* __restrict__ v, const int32_t* __restrict__ positions,
                                     int64_t n_heads, int64_t n_kv_heads, RopeTable table,
                                     T* __restrict__ k_cache, T* __restrict__ v_cache,
                                     const int32_t* __restrict__ slots, int64_t n_slots, DeviceError* err) {
  __shared__ float cs[kMaxRopeHalf], sn[kMaxRopeHalf];
  const int half = table.half;
  const int64_t t = blockIdx.x, hd = 2 * half, kv_dim = n_kv_heads * hd;
  rope_cos_sin(table, positions[t], cs, sn);
  const int64_t slot = slots[t];
  const bool slot_ok = slot >= 0 && slot < n_slots;
  if (!slot_ok && threadIdx.x == 0) report(err, kErrKvSlot, slot, n_slots);
  float* qr = q + t * n_heads * hd;
  const float* kr = k + t * kv_dim;
  for (int64_t p = threadIdx.x; p < (n_heads + n_kv_heads) * half; p += blockDim.x) {
    const int64_t h = p / half;
    const int i = int(p % half);
    if (h < n_heads) {
      float* x = qr + h * hd;
      const float x1 = x[i], x2 = x[i + half];
      x[i] = x1 * cs[i] - x2 * sn[i];
      x[i + half] = x2 * cs[i] + x1 * sn[i];
    } else if (slot_ok) {
      const int64_t off = (h - n_heads) * hd;
      const float x1 = kr[off + i], x2 = kr[off + i + half];
      store_elem(k_cache + slot * kv_dim + off + i, x1 * cs[i] - x2 * sn[i]);
      store_elem(k_cache + slot * kv_dim + off + i + half, x2 * cs[i] + x1 * sn[i]);
    }
  }
  if (slot_ok)
    for (int64_t i = threadIdx.x; i < kv_dim; i += blockDim.x)
      store_elem(v_cache + slot * kv_dim + i, v[t * kv_dim + i]);
}

// One thread per 8 elements of a token's row (per element for rows of other lengths); the K
// and V rows of the token go to its slot.
template <typename T>
__global__ void kv_write_kernel(T* __restrict__ k_cache, T* __restrict__ v_cache, const float* __restrict__ k,
                                const float* __restrict__ v, const int32_t* __restrict__ slots, int64_t n,
                                int64_t kv_dim, int64_t n_slots, DeviceError* err) {
  const int per = kv_dim % 8 == 0 ? 8 : 1;
  const int64_t chunks = kv_dim / per;
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n * chunks) return;
  const int64_t t = i / chunks, c = (i % chunks) * per;
  const int64_t slot = slots[t];
  if (slot < 0 || slot >= n_slots) {
    if (c == 0) report(err, kErrKvSlot, slot, n_slots);
    return;
  }
  if (per == 1) {
    store_elem(k_cache + slot * kv_dim + c, k[t * kv_dim + c]);
    store_elem(v_cache + slot * kv_dim + c, v[t * kv_dim + c]);
    return;
  }
  float kv[8];
  load8(k + t * kv_dim + c, kv);
  store8(k_cache + slot * kv_dim + c, kv);
  load8(v + t * kv_dim + c, kv);
  store8(v_cache + slot * kv_dim + c, kv);
}

int grid_for(int64_t n, int block) { return int((n + block - 1) / block); }

}  // namespace

cudaError_t launch_embedding(cudaStream_t s, DenseView table, const int32_t* tokens, int64_t n, float* out,
                             DeviceError* err) {
  if (n == 0) return cudaSuccess;
  embedding_kernel<<<unsigned(n), 256, 0, s>>>(table, tokens, out, err);
  return cudaGetLastError();
}

cudaError_t launch_rmsnorm(cudaStream_t s, float* x, const float* residual, const float* scale, int64_t n,
                           int64_t dim, float eps, float* out) {
  if (n == 0) return cudaSuccess;
  rmsnorm_kernel<<<unsigned(n), 256, 0, s>>>(x, residual, scale, dim, eps, out);
  return cudaGetLastError();
}

cudaError_t launch_add(cudaStream_t s, float* x, const float* y, int64_t n) {
  if (n == 0) return cudaSuccess;
  const int64_t blocks = std::min<int64_t>(grid_for(n, 256), 4096);
  add_kernel<<<unsigned(blocks), 256, 0, s>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t launch_rope(cudaStream_t s, float* x, const int32_t* positions, int64_t n, int64_t n_heads,
                        const RopeTable& table) {
  if (n == 0) return cudaSuccess;
  rope_kernel<<<unsigned(n), 128, 0, s>>>(x, positions, n_heads, table);
  return cudaGetLastError();
}

cudaError_t launch_kv_write(cudaStream_t s, void* k_cache, void* v_cache, Dt dt, const float* k,
                            const float* v, const int32_t* slots, int64_t n, int64_t kv_dim, int64_t n_slots,
                            DeviceError* err) {
  if (n == 0) return cudaSuccess;
  const int blocks = grid_for(n * (kv_dim % 8 == 0 ? kv_dim / 8 : kv_dim), 256);
  if (dt == Dt::bf16)
    kv_write_kernel<<<blocks, 256, 0, s>>>(static_cast<uint16_t*>(k_cache), static_cast<uint16_t*>(v_cache),
                                           k, v, slots, n, kv_dim, n_slots, err);
  else
    kv_write_kernel<<<blocks, 256, 0, s>>>(static_cast<float*>(k_cache), static_cast<float*>(v_cache), k, v,
                                           slots, n, kv_dim, n_slots, err);
  return cudaGetLastError();
}

}  // namespace gptoss::cuda

namespace gptoss::cuda {

cudaError_t launch_rope_kv_write(cudaStream_t s, float* q, const float* k, const float* v,
                                 const int32_t* positions, int64_t n, int64_t n_heads, int64_t n_kv_heads,
                                 const RopeTable& table, void* k_cache, void* v_cache, Dt dt,
                                 const int32_t* slots, int64_t n_slots, DeviceError* err) {
  if (n == 0) return cudaSuccess;
  if (dt == Dt::bf16)
    rope_kv_write_kernel<<<unsigned(n), 128, 0, s>>>(q, k, v, positions, n_heads, n_kv_heads, table,
                                                     static_cast<uint16_t*>(k_cache),
                                                     static_cast<uint16_t*>(v_cache), slots, n_slots, err);
  else
    rope_kv_write_kernel<<<unsigned(n), 128, 0, s>>>(q, k, v, positions, n_heads, n_kv_heads, table,
                                                     static_cast<float*>(k_cache),
                                                     static_cast<float*>(v_cache), slots, n_slots, err);
  return cudaGetLastError();
}

}  // namespace gptoss::cuda
