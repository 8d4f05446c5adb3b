#pragma once
// The platform layer of the GPU kernels: every .cu file of this backend includes this header
// and no CUDA header directly, so that a HIP build (issue 20) can compile the same sources
// through its own branch here (CUDA names mapped to HIP names, as ggml does).
//
// Warp width: nothing in the kernels hard-codes 32 where a warp width is meant. Reductions
// and shuffles take the width W as a template parameter; kernels that split work "one warp
// per row" say so and use kWarpSize (32 on NVIDIA; a HIP build sets 64 for CDNA wavefronts).
//
// Host builds (g++, no __CUDACC__) see the portable parts only: the bit-level helpers marked
// GPTOSS_HD, with a host emulation of the byte permute, so tests/backends/cuda can check them
// against the CPU reference without a GPU.
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#define GPTOSS_HD __host__ __device__ __forceinline__
#define GPTOSS_DEV __device__ __forceinline__
#else
#define GPTOSS_HD inline
#endif

namespace gptoss::cuda {

constexpr int kWarpSize = 32;

// r.byte[n] = {y:x}.byte[s.nibble[n] & 7] for n < 4 (PTX prmt in its default mode; only the
// low 3 bits of each selector nibble count, the upper 16 bits of s are ignored).
GPTOSS_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  const uint64_t xy = uint64_t(y) << 32 | x;
  uint32_t r = 0;
  for (int n = 0; n < 4; ++n) r |= uint32_t((xy >> (8 * ((s >> (4 * n)) & 7))) & 0xff) << (8 * n);
  return r;
#endif
}

// c + the dot product of the four signed bytes of a and of b (dp4a; sdot4 on CDNA).
GPTOSS_HD int32_t dot4_i8(uint32_t a, uint32_t b, int32_t c) {
#if defined(__CUDA_ARCH__)
  return __dp4a(int(a), int(b), c);
#else
  for (int n = 0; n < 4; ++n) c += int32_t(int8_t(a >> (8 * n))) * int32_t(int8_t(b >> (8 * n)));
  return c;
#endif
}

GPTOSS_HD float bits_to_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

GPTOSS_HD uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

#if defined(__CUDACC__)
// Reductions over groups of W consecutive lanes (W a power of two <= the warp width); every
// lane of the group gets the result. Butterfly order, so the result is the same on every lane.
template <int W>
GPTOSS_DEV float warp_sum(float v) {
  static_assert(W > 0 && (W & (W - 1)) == 0 && W <= kWarpSize, "W: a power of two <= warp");
#pragma unroll
  for (int off = W / 2; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off, W);
  return v;
}

template <int W>
GPTOSS_DEV float warp_max(float v) {
  static_assert(W > 0 && (W & (W - 1)) == 0 && W <= kWarpSize, "W: a power of two <= warp");
#pragma unroll
  for (int off = W / 2; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off, W));
  return v;
}

// (value, index) argmax over W lanes: the larger value, the lower index on ties. NaN never
// wins (callers pass -inf for entries that must not be chosen).
template <int W>
GPTOSS_DEV void warp_argmax(float& v, int32_t& i) {
  static_assert(W > 0 && (W & (W - 1)) == 0 && W <= kWarpSize, "W: a power of two <= warp");
#pragma unroll
  for (int off = W / 2; off > 0; off /= 2) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, off, W);
    const int32_t oi = __shfl_xor_sync(0xffffffffu, i, off, W);
    if (ov > v || (ov == v && oi < i)) {
      v = ov;
      i = oi;
    }
  }
}

template <int W>
GPTOSS_DEV float shfl(float v, int src_lane) {
  return __shfl_sync(0xffffffffu, v, src_lane, W);
}
#endif

}  // namespace gptoss::cuda
