#pragma once
// Why cudaGetDeviceCount failed, in words: without any NVIDIA driver the runtime reports
// cudaErrorInsufficientDriver ("driver version is insufficient"), which misleads; say that
// the driver library is missing instead.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <string>

namespace gptoss::cuda {

inline std::string no_device_reason(cudaError_t e) {
  if (void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL); h != nullptr) {
    dlclose(h);
    return std::string("no usable CUDA driver or device (") + cudaGetErrorName(e) + ": " +
           cudaGetErrorString(e) + ")";
  }
  return "no NVIDIA driver on this machine (libcuda.so.1 not found)";
}

}  // namespace gptoss::cuda
