// MoE token grouping on the device (no host synchronisation): a histogram of the router's
// expert ids, a prefix sum over experts (assignments and tiles), and a stable scatter of
// assignment ids into per-expert lists. The layout is device/moe_routing.cuh's.
#include "device/compat.cuh"
#include "device/moe_routing.cuh"
#include "kernels.hpp"

namespace gptoss::cuda {
namespace {

constexpr int kGroupThreads = 1024;

// One block. All threads count; warp 0 scans the counts (each lane a run of consecutive
// experts) and then scatters the assignments one warp-width chunk at a time, in order: lanes
// with the same expert (match_any) take consecutive places by lane, so every expert's list
// is in ascending assignment order and the result does not depend on thread timing.
// Expert ids are made relative to first_expert; ids outside [0, experts) then are another
// device's (expert parallelism) and stay out of every list.
__global__ void __launch_bounds__(kGroupThreads)
    moe_group_kernel(const int32_t* __restrict__ ids, int64_t n_assign, int32_t experts, int32_t first_expert,
                     int32_t tile_m, int32_t* __restrict__ offsets, int32_t* __restrict__ tile_offsets,
                     int32_t* __restrict__ order) {
  __shared__ int32_t count[kMaxExperts];
  for (int e = threadIdx.x; e < experts; e += blockDim.x) count[e] = 0;
  __syncthreads();
  for (int64_t a = threadIdx.x; a < n_assign; a += blockDim.x) {
    const int32_t e = ids[a] - first_expert;
    if (e >= 0 && e < experts) atomicAdd(&count[e], 1);
  }
  __syncthreads();
  if (threadIdx.x >= kWarpSize) return;

  const int lane = threadIdx.x;
  const int per = (experts + kWarpSize - 1) / kWarpSize;
  const int e0 = min(lane * per, int(experts)), e1 = min(e0 + per, int(experts));
  int32_t n_local = 0, tiles_local = 0;
  for (int e = e0; e < e1; ++e) {
    n_local += count[e];
    tiles_local += (count[e] + tile_m - 1) / tile_m;
  }
  // Inclusive scans over the lanes, then exclusive starts of this lane's run.
  int32_t n_incl = n_local, tiles_incl = tiles_local;
#pragma unroll
  for (int off = 1; off < kWarpSize; off *= 2) {
    const int32_t a = __shfl_up_sync(0xffffffffu, n_incl, off);
    const int32_t b = __shfl_up_sync(0xffffffffu, tiles_incl, off);
    if (lane >= off) {
      n_incl += a;
      tiles_incl += b;
    }
  }
  int32_t n_run = n_incl - n_local, tiles_run = tiles_incl - tiles_local;
  for (int e = e0; e < e1; ++e) {
    offsets[e] = n_run;
    tile_offsets[e] = tiles_run;
    tiles_run += (count[e] + tile_m - 1) / tile_m;
    const int32_t c = count[e];
    count[e] = n_run;  // from here on: the next free place of expert e
    n_run += c;
  }
  if (lane == kWarpSize - 1) {
    offsets[experts] = n_incl;
    tile_offsets[experts] = tiles_incl;
  }
  __syncwarp();

  const LaneMask lower = lanes_below(lane);
  for (int64_t base = 0; base < n_assign; base += kWarpSize) {
    const int64_t a = base + lane;
    const int32_t e = a < n_assign ? ids[a] - first_expert : -1;
    const bool valid = e >= 0 && e < experts;
    const LaneMask peers = match_any(valid ? e : experts + lane);
    if (valid) order[count[e] + lane_count(peers & lower)] = int32_t(a);
    __syncwarp();
    if (valid && lane == first_lane(peers)) count[e] += lane_count(peers);
    __syncwarp();
  }
}

}  // namespace

cudaError_t launch_moe_group(cudaStream_t s, const int32_t* ids, int64_t n_assign, int32_t experts,
                             int32_t first_expert, int32_t tile_m, int32_t* offsets, int32_t* tile_offsets,
                             int32_t* order) {
  if (experts < 1 || experts > kMaxExperts || tile_m < 1) return cudaErrorInvalidValue;
  moe_group_kernel<<<1, kGroupThreads, 0, s>>>(ids, n_assign, experts, first_expert, tile_m, offsets,
                                               tile_offsets, order);
  return cudaGetLastError();
}

}  // namespace gptoss::cuda
