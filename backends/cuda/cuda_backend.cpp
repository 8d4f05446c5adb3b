// The CUDA backend plugin: its table, its exports, and the error model. Devices, streams and
// steps: devices.cpp; buffers: memory.cpp; weights: weights.cpp; KV caches: kv.cpp; op slots:
// ops.cpp; kernels: *.cu.
#include "cuda_backend.hpp"

#include "driver_check.hpp"
#include "slots.hpp"

namespace gptoss::cuda {

const gptoss_host_api* g_host = nullptr;

void log(gptoss_log_level level, const std::string& message) {
  if (g_host != nullptr && g_host->log != nullptr)
    g_host->log(level, (std::string(kBackendName) + " backend: " + message).c_str());
}

namespace {
thread_local std::string t_error;

// Errors after which the CUDA context cannot be used again (a fault inside a kernel).
bool sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
#if !defined(GPTOSS_HIP)  // faults HIP reports as one of the above
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
#endif
    case cudaErrorECCUncorrectable:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
      return true;
    default:
      return false;
  }
}
}  // namespace

void set_error(std::string message) { t_error = std::move(message); }
const char* error_text() { return t_error.c_str(); }

gptoss_status fail(cudaError_t e, const std::string& what) {
  std::string msg = what + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
  if (sticky(e)) msg += " (the GPU context is lost: release the model and load it again)";
  set_error(msg);
  switch (e) {
    case cudaErrorMemoryAllocation:
      return gptoss_status_insufficient_memory;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorNoKernelImageForDevice:
#if !defined(GPTOSS_HIP)  // no HIP counterparts
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorDevicesUnavailable:
#endif
      return gptoss_status_unsupported_system;
    default:
      return gptoss_status_internal;
  }
}

gptoss_status fail(gptoss_status st, const std::string& message) {
  set_error(message);
  return st;
}

const gptoss_backend_api kApi = {
    /* .struct_size          = */ sizeof(gptoss_backend_api),
    /* .abi_major            = */ GPTOSS_BACKEND_ABI_MAJOR,
    /* .abi_minor            = */ GPTOSS_BACKEND_ABI_MINOR,
    /* .name                 = */ kBackendName,
    /* .flags                = */ 0,
    /* .device_count         = */ slots::device_count,
    /* .device_describe      = */ slots::device_describe,
    /* .device_open          = */ slots::device_open,
    /* .device_close         = */ slots::device_close,
    /* .last_error           = */ slots::last_error,
    /* .device_set_precision = */ slots::device_set_precision,
    /* .device_memory_info   = */ slots::device_memory_info,
    /* .stream_create        = */ slots::stream_create,
    /* .stream_destroy       = */ slots::stream_destroy,
    /* .stream_synchronize   = */ slots::stream_synchronize,
    /* .event_create         = */ slots::event_create,
    /* .event_destroy        = */ slots::event_destroy,
    /* .event_record         = */ slots::event_record,
    /* .stream_wait_event    = */ slots::stream_wait_event,
    /* .buffer_alloc         = */ slots::buffer_alloc,
    /* .buffer_free          = */ slots::buffer_free,
    /* .buffer_view          = */ slots::buffer_view,
    /* .buffer_write         = */ slots::buffer_write,
    /* .buffer_read          = */ slots::buffer_read,
    /* .buffer_copy          = */ slots::buffer_copy,
    /* .buffer_copy_peer     = */ slots::buffer_copy_peer,
    /* .weights_begin        = */ weights_begin,
    /* .weight_upload        = */ weight_upload,
    /* .weights_end          = */ weights_end,
    /* .weight_free          = */ weight_free,
    /* .kv_create            = */ kv_create,
    /* .kv_grow              = */ kv_grow,
    /* .kv_destroy           = */ kv_destroy,
    /* .step_begin           = */ slots::step_begin,
    /* .step_end             = */ slots::step_end,
    /* .embedding            = */ slots::embedding,
    /* .rmsnorm              = */ slots::rmsnorm,
    /* .linear               = */ slots::linear,
    /* .rope                 = */ slots::rope,
    /* .kv_write             = */ slots::kv_write,
    /* .attention            = */ slots::attention,
    /* .router               = */ slots::router,
    /* .moe                  = */ slots::moe,
    /* .add                  = */ slots::add,
    /* .linear_qkv           = */ slots::linear_qkv,
    /* .add_rmsnorm          = */ slots::add_rmsnorm,
    /* .rope_kv_write        = */ slots::rope_kv_write,
    /* .sample               = */ slots::sample,
    /* .device_properties    = */ slots::device_properties,
};

const char* unavailable_reason();  // devices.cpp

}  // namespace gptoss::cuda

extern "C" {

// 0 without a usable device, so that "auto" picks the CPU; the reason is
// gptoss_backend_unavailable_reason's, which the registry logs.
GPTOSS_PLUGIN_EXPORT uint32_t gptoss_backend_score(void) {
  return gptoss::cuda::slots::device_count() > 0 ? 100 : 0;
}

GPTOSS_PLUGIN_EXPORT const char* gptoss_backend_unavailable_reason(void) {
  return gptoss::cuda::unavailable_reason();
}

GPTOSS_PLUGIN_EXPORT gptoss_status gptoss_backend_init(const gptoss_host_api* host,
                                                       const gptoss_backend_api** api_out) {
  if (host == nullptr || api_out == nullptr) return gptoss_status_invalid_argument;
  if (host->abi_major != GPTOSS_BACKEND_ABI_MAJOR) return gptoss_status_unsupported_system;
  gptoss::cuda::g_host = host;
  *api_out = &gptoss::cuda::kApi;
  return gptoss_status_success;
}

}  // extern "C"
