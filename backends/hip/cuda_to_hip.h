#pragma once
// The HIP backend's one compatibility header: it builds the CUDA backend's sources
// (backends/cuda) for AMD GPUs by giving the CUDA names they use their HIP meaning, as ggml
// does. Only the names those sources use are here; a new one fails to compile, loudly.
// Included through backends/cuda/gpu_runtime.hpp (host code) and device/compat.cuh (kernels)
// when GPTOSS_HIP is defined; never by the CUDA build.
//
// Kernels: hipcc (device and host passes), with <hip/hip_runtime.h>. Host code (*.cpp): the
// C++ compiler, with the runtime API only (__HIP_PLATFORM_AMD__ is set by CMake).
#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#else
#include <hip/hip_runtime_api.h>
#endif

// ---- runtime API (host) --------------------------------------------------------------------
#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaErrorInvalidValue hipErrorInvalidValue
#define cudaErrorMemoryAllocation hipErrorOutOfMemory
#define cudaErrorNoDevice hipErrorNoDevice
#define cudaErrorInsufficientDriver hipErrorInsufficientDriver
#define cudaErrorNoKernelImageForDevice hipErrorNoBinaryForGpu
#define cudaErrorIllegalAddress hipErrorIllegalAddress
#define cudaErrorLaunchFailure hipErrorLaunchFailure
#define cudaErrorECCUncorrectable hipErrorECCNotCorrectable
#define cudaErrorAssert hipErrorAssert
#define cudaErrorLaunchTimeout hipErrorLaunchTimeOut
#define cudaErrorNotSupported hipErrorNotSupported
#define cudaGetErrorName hipGetErrorName
#define cudaGetErrorString hipGetErrorString
#define cudaGetLastError hipGetLastError

#define cudaDeviceProp hipDeviceProp_t
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaDeviceGetAttribute hipDeviceGetAttribute
#define cudaDevAttrMemoryClockRate hipDeviceAttributeMemoryClockRate
#define cudaDevAttrGlobalMemoryBusWidth hipDeviceAttributeMemoryBusWidth
#define cudaSetDevice hipSetDevice
#define cudaDeviceSynchronize hipDeviceSynchronize
#define cudaMemGetInfo hipMemGetInfo

#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaHostAlloc hipHostMalloc  // hipHostAlloc is deprecated; same arguments
#define cudaHostAllocDefault hipHostMallocDefault
#define cudaHostAllocMapped hipHostMallocMapped
#define cudaFreeHost hipHostFree
#define cudaHostGetDevicePointer hipHostGetDevicePointer
#define cudaMemcpy hipMemcpy
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemcpyPeerAsync hipMemcpyPeerAsync
#define cudaMemsetAsync hipMemsetAsync
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice

#define cudaStream_t hipStream_t
#define cudaStreamCreate hipStreamCreate
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStreamWaitEvent hipStreamWaitEvent
#define cudaEvent_t hipEvent_t
#define cudaEventCreateWithFlags hipEventCreateWithFlags
#define cudaEventDisableTiming hipEventDisableTiming
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEventDestroy hipEventDestroy

// Graphs (decode-step capture): HIP 5.2 has them with CUDA 11's names; only
// cudaGraphInstantiate's CUDA 12 signature (flags, no error node/log) differs.
#define cudaGraph_t hipGraph_t
#define cudaGraphExec_t hipGraphExec_t
#define cudaGraphLaunch hipGraphLaunch
#define cudaGraphDestroy hipGraphDestroy
#define cudaGraphExecDestroy hipGraphExecDestroy
#define cudaGraphInstantiate hipGraphInstantiateWithFlags
#define cudaStreamBeginCapture hipStreamBeginCapture
#define cudaStreamEndCapture hipStreamEndCapture
#define cudaStreamIsCapturing hipStreamIsCapturing
#define cudaStreamCaptureStatus hipStreamCaptureStatus
#define cudaStreamCaptureStatusNone hipStreamCaptureStatusNone
#define cudaStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal

// ---- device code -------------------------------------------------------------------------
// CUDA's *_sync warp intrinsics take a lane mask; HIP 5.2 has only the unmasked forms, which
// act on the whole wavefront. Every caller passes the full mask (compat.cuh's reductions),
// so dropping it changes nothing.
#if defined(__HIPCC__)
template <typename T>
__device__ __forceinline__ T __shfl_sync(unsigned, T v, int src, int width = warpSize) {
  return __shfl(v, src, width);
}
template <typename T>
__device__ __forceinline__ T __shfl_xor_sync(unsigned, T v, int mask, int width = warpSize) {
  return __shfl_xor(v, mask, width);
}
template <typename T>
__device__ __forceinline__ T __shfl_up_sync(unsigned, T v, unsigned delta, int width = warpSize) {
  return __shfl_up(v, delta, width);
}
// Orders the wavefront's shared-memory accesses around the barrier (lanes of a wavefront run
// in lockstep; the fences keep the compiler and the memory model from reordering).
__device__ __forceinline__ void __syncwarp(unsigned = 0xffffffffu) {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
#endif
