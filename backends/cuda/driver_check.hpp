#pragma once
// What the CUDA build and the HIP build (backends/hip) of this backend's host code say and
// check differently: the backend's name, which devices its code runs on, and why there is
// no usable device.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "gpu_runtime.hpp"

namespace gptoss::cuda {

#if defined(GPTOSS_HIP)
inline constexpr const char* kBackendName = "hip";
inline constexpr const char* kGpuApi = "HIP";
inline constexpr const char* kUnits = "CUs";
#else
inline constexpr const char* kBackendName = "cuda";
inline constexpr const char* kGpuApi = "CUDA";
inline constexpr const char* kUnits = "SMs";
#endif

// The device's architecture as its compiler names it: sm_90, gfx90a.
inline std::string arch_name(const cudaDeviceProp& p) {
#if defined(GPTOSS_HIP)
  const std::string arch(p.gcnArchName);  // e.g. "gfx90a:sramecc+:xnack-"
  return arch.substr(0, arch.find(':'));
#else
  return "sm_" + std::to_string(p.major) + std::to_string(p.minor);
#endif
}

// Whether this build's device code runs on p; why not, in words, when it does not.
inline bool device_usable(const cudaDeviceProp& p, std::string* why) {
#if defined(GPTOSS_HIP)
  // Code objects exist for the built architectures only (no JIT from an intermediate form).
  const std::string arch = arch_name(p), built = GPTOSS_HIP_ARCHITECTURES;  // "gfx90a,gfx940"
  for (size_t b = 0; b <= built.size();) {
    const size_t e = std::min(built.find(',', b), built.size());
    if (built.compare(b, e - b, arch) == 0) return true;
    b = e + 1;
  }
  *why = std::string(p.name) + " is " + arch + " (this build has code for " + built + ")";
  return false;
#else
  if (p.major >= 8) return true;
  *why = std::string(p.name) + " has compute capability " + std::to_string(p.major) + "." +
         std::to_string(p.minor) + " (8.0 or later needed)";
  return false;
#endif
}

// Why the device count failed, in words. Without any NVIDIA driver the CUDA runtime reports
// cudaErrorInsufficientDriver ("driver version is insufficient"), which misleads; without the
// amdgpu kernel driver, HIP reports no device. Say that the driver is missing instead.
inline std::string no_device_reason(cudaError_t e) {
  const std::string runtime = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
#if defined(GPTOSS_HIP)
  if (access("/dev/kfd", F_OK) != 0) return "no AMD GPU driver on this machine (/dev/kfd not found)";
  return "no usable AMD GPU or ROCm driver (" + runtime + ")";
#else
  if (void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL); h != nullptr) {
    dlclose(h);
    return "no usable CUDA driver or device (" + runtime + ")";
  }
  return "no NVIDIA driver on this machine (libcuda.so.1 not found)";
#endif
}

}  // namespace gptoss::cuda
