#pragma once
// The GPU runtime API of this backend's host code: CUDA's, or HIP's under CUDA's names
// (backends/hip/cuda_to_hip.h) when backends/hip builds these sources with GPTOSS_HIP.
#if defined(GPTOSS_HIP)
#include "cuda_to_hip.h"
#else
#include <cuda_runtime_api.h>
#endif
