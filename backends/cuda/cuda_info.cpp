// gptoss-cuda-info: what the CUDA backend would see on this machine, as key=value lines for
// scripts (scripts/gpu-check.sh, the GPU tests in ctest).
//   gptoss-cuda-info            every usable device: name, compute capability, SMs, memory,
//                               peak bandwidth; exit 0 if there is one
//   gptoss-cuda-info --check    no output on success; exit 77 (ctest's "skipped") with the
//                               reason on stderr when there is no usable device
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

#include "driver_check.hpp"

int main(int argc, char** argv) {
  const bool check = argc > 1 && std::strcmp(argv[1], "--check") == 0;
  if (argc > 2 || (argc == 2 && !check)) {
    std::fprintf(stderr, "usage: gptoss-cuda-info [--check]\n");
    return 2;
  }
  int n = 0;
  if (cudaError_t e = cudaGetDeviceCount(&n); e != cudaSuccess) {
    std::fprintf(stderr, "%s\n", gptoss::cuda::no_device_reason(e).c_str());
    return 77;
  }
  int usable = 0;
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess || p.major < 8) {
      std::fprintf(stderr, "device %d: %s, compute capability %d.%d: not usable (8.0 or later)\n", i, p.name,
                   p.major, p.minor);
      continue;
    }
    ++usable;
    if (check) continue;
    int clock_khz = 0, bus_bits = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, i);
    cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, i);
    size_t free_bytes = 0, total_bytes = 0;
    cudaSetDevice(i);
    cudaMemGetInfo(&free_bytes, &total_bytes);
    std::printf(
        "device=%d\nname=%s\ncompute_capability=%d.%d\nsms=%d\nmemory_total_bytes=%zu\n"
        "memory_free_bytes=%zu\npeak_bandwidth_gbps=%.0f\n",
        i, p.name, p.major, p.minor, p.multiProcessorCount, total_bytes, free_bytes,
        2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9);
  }
  if (usable == 0) {
    std::fprintf(stderr, "no CUDA device of compute capability 8.0 or later\n");
    return 77;
  }
  return 0;
}
