#pragma once
// The platform layer of the GPU kernels: every .cu file of this backend includes this header
// and no CUDA header directly, so that the HIP build (backends/hip, GPTOSS_HIP) compiles the
// same sources through backends/hip/cuda_to_hip.h (CUDA names mapped to HIP names).
//
// Warp width: nothing in the kernels hard-codes 32 where a warp width is meant. Reductions
// and shuffles take the width W as a template parameter; kernels that split work "one warp
// per row" say so and use kWarpSize, GPTOSS_WARP_SIZE: 32 on NVIDIA, 64 for the CDNA
// wavefronts of the HIP build (its CMakeLists sets it; a device pass checks it against the
// target's own width).
//
// Host builds (g++, no GPU compiler) see the portable parts only: the bit-level helpers marked
// GPTOSS_HD, with a host emulation of the byte permute, so tests/backends/cuda can check them
// against the CPU reference without a GPU.
#include <cstdint>
#include <cstring>

#if defined(GPTOSS_HIP)
#include "cuda_to_hip.h"
#elif defined(__CUDACC__)
#include <cuda_runtime.h>
#endif

// GPTOSS_GPU_CODE: compiled by a GPU compiler (nvcc or hipcc), device code may follow.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define GPTOSS_GPU_CODE 1
#define GPTOSS_HD __host__ __device__ __forceinline__
#define GPTOSS_DEV __device__ __forceinline__
#else
#define GPTOSS_GPU_CODE 0
#define GPTOSS_HD inline
#endif

#if !defined(GPTOSS_WARP_SIZE)
#define GPTOSS_WARP_SIZE 32
#endif
#if defined(__HIP_DEVICE_COMPILE__)
static_assert(GPTOSS_WARP_SIZE == __AMDGCN_WAVEFRONT_SIZE, "GPTOSS_WARP_SIZE: the target's wavefront");
#endif

namespace gptoss::cuda {

constexpr int kWarpSize = GPTOSS_WARP_SIZE;

// prmt's selector s (one nibble per result byte, low 3 bits used) as a selector of CDNA's
// v_perm_b32 (one byte per result byte; 0..7 pick from {first operand : second operand}, so
// byte_perm(x, y, s) is v_perm_b32(y, x, perm_selector(s))). Host-tested against the ISA.
GPTOSS_HD uint32_t perm_selector(uint32_t s) {
  return (s & 0x7u) | (s & 0x70u) << 4 | (s & 0x700u) << 8 | (s & 0x7000u) << 12;
}

// r.byte[n] = {y:x}.byte[s.nibble[n] & 7] for n < 4 (PTX prmt in its default mode; only the
// low 3 bits of each selector nibble count, the upper 16 bits of s are ignored).
GPTOSS_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#elif defined(__HIP_DEVICE_COMPILE__)
  return __builtin_amdgcn_perm(y, x, perm_selector(s));     // v_perm_b32
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
#elif defined(__HIP_DEVICE_COMPILE__) && defined(__gfx90a__)
  return __builtin_amdgcn_sdot4(int(a), int(b), c, false);  // v_dot4c_i32_i8 on gfx90a; no clamp
#else
  for (int n = 0; n < 4; ++n) c += int32_t(int8_t(a >> (8 * n))) * int32_t(int8_t(b >> (8 * n)));
  return c;
#endif
}

GPTOSS_HD float bits_to_float(uint32_t u) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)  // HIP has the same intrinsic
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

GPTOSS_HD uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)  // HIP has the same intrinsic
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

#if GPTOSS_GPU_CODE
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

// ---- Logical warps ------------------------------------------------------------------------
// Kernels that split work "one warp per ..." and only reduce across a warp (gemv.cu,
// moe_gemv.cu, router.cu) are templated on their warp width W: kWarpSize in production, and
// W = 64 on NVIDIA for the wave64 emulation (GPTOSS_CUDA_WAVE64=1, kernels.hpp), where a
// logical warp is two hardware warps, so that the index math of the HIP build's wavefronts
// runs on an NVIDIA GPU before it meets an MI250. Reductions over such a pair cross through
// shared memory (`pair`: one float per hardware warp of the block) behind a named barrier of
// the pair's 64 threads; a block holds at most 15 pairs (barrier 0 is __syncthreads).
constexpr int kMaxBlockWarps = 32;

#if !defined(GPTOSS_HIP)
GPTOSS_DEV void pair_barrier(int pair) {
  asm volatile("bar.sync %0, %1;" ::"r"(1 + pair), "r"(2 * kWarpSize) : "memory");
}

// Combines v of the two hardware warps of a logical 64-lane warp (lane 0's of each), the
// lower warp's first, so that both warps get the same value.
template <typename T, typename Op>
GPTOSS_DEV T pair_combine(T v, T* pair, Op op) {
  const int hw = threadIdx.x / kWarpSize, p = hw / 2;
  if (threadIdx.x % kWarpSize == 0) pair[hw] = v;
  pair_barrier(p);
  const T r = op(pair[2 * p], pair[2 * p + 1]);
  pair_barrier(p);  // pair[] is written again by the next reduction
  return r;
}
#endif

// op over a logical warp of W lanes (butterfly within the hardware warp, then across the
// pair); every lane gets the result.
template <int W, typename Op>
GPTOSS_DEV float group_reduce(float v, float* pair, Op op) {
  constexpr int H = W < kWarpSize ? W : kWarpSize;  // lanes of one hardware warp
#if defined(GPTOSS_HIP)
  static_assert(W <= kWarpSize, "no logical warps wider than a wavefront");
#else
  static_assert(W <= 2 * kWarpSize, "a logical warp is at most two hardware warps");
#endif
#pragma unroll
  for (int off = H / 2; off > 0; off /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, off, H));
#if !defined(GPTOSS_HIP)
  if constexpr (W > kWarpSize) return pair_combine(v, pair, op);
#endif
  (void)pair;
  return v;
}

template <int W>
GPTOSS_DEV float group_sum(float v, float* pair) {
  return group_reduce<W>(v, pair, [](float a, float b) { return a + b; });
}

template <int W>
GPTOSS_DEV float group_max(float v, float* pair) {
  return group_reduce<W>(v, pair, [](float a, float b) { return fmaxf(a, b); });
}

// warp_argmax over a logical warp of W lanes; `pair` as above, one entry per hardware warp.
struct ArgMax {
  float v;
  int32_t i;
};
template <int W>
GPTOSS_DEV void group_argmax(float& v, int32_t& i, ArgMax* pair) {
  warp_argmax<(W < kWarpSize ? W : kWarpSize)>(v, i);
#if !defined(GPTOSS_HIP)
  if constexpr (W > kWarpSize) {
    const ArgMax r = pair_combine(ArgMax{v, i}, pair, [](ArgMax a, ArgMax b) {
      return b.v > a.v || (b.v == a.v && b.i < a.i) ? b : a;
    });
    v = r.v, i = r.i;
  }
#endif
  (void)pair;
}

// A set of lanes of the warp, bit n for lane n: as wide as the warp.
#if defined(GPTOSS_HIP)
using LaneMask = unsigned long long;
#else
using LaneMask = uint32_t;
#endif
static_assert(sizeof(LaneMask) * 8 == kWarpSize, "one bit per lane");

GPTOSS_DEV LaneMask lanes_below(int lane) { return (LaneMask(1) << lane) - 1; }

GPTOSS_DEV int lane_count(LaneMask m) {
#if defined(GPTOSS_HIP)
  return __popcll(m);
#else
  return __popc(m);
#endif
}

GPTOSS_DEV int first_lane(LaneMask m) {
#if defined(GPTOSS_HIP)
  return __ffsll(m) - 1;
#else
  return __ffs(int(m)) - 1;
#endif
}

// The lanes whose v equals this lane's; every lane of the warp must call it.
GPTOSS_DEV LaneMask match_any(int32_t v) {
#if defined(GPTOSS_HIP)
  // CDNA has no match instruction: one ballot per distinct value, led by the lowest lane
  // not yet matched (peers always holds the lane itself once matched).
  LaneMask peers = 0;
  for (;;) {
    const LaneMask open = __ballot(peers == 0);
    if (open == 0) return peers;
    const int32_t lead = __shfl(v, first_lane(open));
    const LaneMask same = __ballot(v == lead);
    if (v == lead) peers = same;
  }
#else
  return __match_any_sync(0xffffffffu, v);
#endif
}
#endif

}  // namespace gptoss::cuda
