// gptoss-cuda-info (gptoss-hip-info, built from this file by backends/hip): what the backend
// would see on this machine, as key=value lines for scripts (scripts/gpu-check.sh, the GPU
// tests in ctest).
//   gptoss-cuda-info            every usable device: name, architecture, SMs or CUs, memory,
//                               peak bandwidth; exit 0 if there is one
//   gptoss-cuda-info --check    no output on success; exit 77 (ctest's "skipped") with the
//                               reason on stderr when there is no usable device
#include <cstdio>
#include <cstring>
#include <string>

#include "driver_check.hpp"
#include "gpu_runtime.hpp"

int main(int argc, char** argv) {
  const bool check = argc > 1 && std::strcmp(argv[1], "--check") == 0;
  if (argc > 2 || (argc == 2 && !check)) {
    std::fprintf(stderr, "usage: gptoss-%s-info [--check]\n", gptoss::cuda::kBackendName);
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
    if (cudaError_t e = cudaGetDeviceProperties(&p, i); e != cudaSuccess) {
      std::fprintf(stderr, "device %d: %s\n", i, cudaGetErrorString(e));
      continue;
    }
    if (std::string why; !gptoss::cuda::device_usable(p, &why)) {
      std::fprintf(stderr, "device %d: not usable: %s\n", i, why.c_str());
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
        "device=%d\nname=%s\narch=%s\ncompute_capability=%d.%d\nsms=%d\nmemory_total_bytes=%zu\n"
        "memory_free_bytes=%zu\npeak_bandwidth_gbps=%.0f\n",
        i, p.name, gptoss::cuda::arch_name(p).c_str(), p.major, p.minor, p.multiProcessorCount, total_bytes,
        free_bytes, 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9);
  }
  if (usable == 0) {
    std::fprintf(stderr, "no %s device this build can run on\n", gptoss::cuda::kGpuApi);
    return 77;
  }
  return 0;
}
