// The CUDA backend plugin: entry points, device discovery, devices, streams, buffers and the
// error model. Weights: weights.cpp; op slots: ops.cpp; kernels: *.cu.
#include "cuda_backend.hpp"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "driver_check.hpp"
#include "ops.hpp"

namespace gptoss::cuda {

const gptoss_host_api* g_host = nullptr;

void log(gptoss_log_level level, const std::string& message) {
  if (g_host != nullptr && g_host->log != nullptr) g_host->log(level, ("cuda backend: " + message).c_str());
}

namespace {
thread_local std::string t_error;
}
void set_error(std::string message) { t_error = std::move(message); }
const char* error_text() { return t_error.c_str(); }

// Errors after which the CUDA context cannot be used again (a fault inside a kernel).
static bool sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorECCUncorrectable:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
      return true;
    default:
      return false;
  }
}

gptoss_status fail(cudaError_t e, const std::string& what) {
  std::string msg = what + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
  if (sticky(e)) msg += " (the GPU context is lost: release the model and load it again)";
  set_error(msg);
  switch (e) {
    case cudaErrorMemoryAllocation: return gptoss_status_insufficient_memory;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorDevicesUnavailable:
      return gptoss_status_unsupported_system;
    default: return gptoss_status_internal;
  }
}

gptoss_status fail(gptoss_status st, const std::string& message) {
  set_error(message);
  return st;
}

gptoss_status Device::activate() const {
  const cudaError_t e = cudaSetDevice(ordinal);
  return e == cudaSuccess ? gptoss_status_success : fail(e, "cudaSetDevice");
}

size_t Device::buffer_size(const void* p) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = buffers.find(const_cast<void*>(p));
  return it == buffers.end() ? 0 : it->second;
}

gptoss_status Device::take_device_error() {
  const DeviceError e = *error_host;  // the stream was synchronised: the kernels' writes are visible
  if (e.code == kErrNone) return gptoss_status_success;
  error_host->code = kErrNone;
  const std::string v = std::to_string(e.value), lim = std::to_string(e.limit);
  switch (e.code) {
    case kErrTokenId:
      return fail(gptoss_status_invalid_argument, "embedding: token id " + v + " out of range (vocabulary " + lim + ")");
    case kErrKvSlot:
      return fail(gptoss_status_invalid_argument, "kv_write: slot " + v + " outside the KV cache (" + lim + " slots)");
    case kErrExpertId:
      return fail(gptoss_status_invalid_argument, "moe: expert id " + v + " out of range (" + lim + " experts)");
    case kErrPageTable:
      return fail(gptoss_status_invalid_argument, "attention: keys outside the page table or cache (" + v + ", limit " + lim + ")");
    default:
      return fail(gptoss_status_internal, "a kernel reported error code " + std::to_string(e.code));
  }
}

Workspace::~Workspace() {
  if (block_ != nullptr) cudaFree(block_);
}

gptoss_status Workspace::reserve(cudaStream_t s, size_t bytes, void** out) {
  if (bytes <= size_ && block_ != nullptr) {
    *out = block_;
    return gptoss_status_success;
  }
  // Grow by half again, so that a slowly growing need does not reallocate every call.
  const size_t want = std::max(bytes, size_ + size_ / 2);
  if (block_ != nullptr) {
    if (cudaError_t e = cudaStreamSynchronize(s); e != cudaSuccess) return fail(e, "workspace: stream synchronize");
    cudaFree(block_);
    block_ = nullptr;
    size_ = 0;
  }
  if (cudaError_t e = cudaMalloc(&block_, want); e != cudaSuccess) {
    block_ = nullptr;
    return fail(e, "workspace: cudaMalloc of " + std::to_string(want) + " bytes");
  }
  size_ = want;
  *out = block_;
  return gptoss_status_success;
}

namespace {

// Devices this build can run on: compute capability 8.0 and later (SASS for the listed
// architectures, PTX JIT for later ones). Found once; the reason when there are none.
struct Discovery {
  std::vector<int> ordinals;
  std::vector<DeviceInfo> info;
  std::string reason;
};

const Discovery& discovery() {
  static const Discovery d = [] {
    Discovery r;
    int n = 0;
    if (cudaError_t e = cudaGetDeviceCount(&n); e != cudaSuccess) {
      r.reason = no_device_reason(e);
      return r;
    }
    std::string skipped;
    for (int i = 0; i < n; ++i) {
      cudaDeviceProp p{};
      if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
      if (p.major < 8) {
        skipped += std::string(skipped.empty() ? "" : "; ") + p.name + " has compute capability " +
                   std::to_string(p.major) + "." + std::to_string(p.minor);
        continue;
      }
      DeviceInfo info;
      info.name = p.name;
      info.major = p.major;
      info.minor = p.minor;
      info.sms = p.multiProcessorCount;
      info.total_memory = p.totalGlobalMem;
      info.max_smem_optin = p.sharedMemPerBlockOptin;
      int clock_khz = 0, bus_bits = 0;
      cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, i);
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, i);
      info.peak_gbps = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;  // double data rate
      r.ordinals.push_back(i);
      r.info.push_back(info);
    }
    if (r.ordinals.empty())
      r.reason = n == 0 ? "no CUDA device" : "no CUDA device of compute capability 8.0 or later (" + skipped + ")";
    return r;
  }();
  return d;
}

int32_t device_count() { return int32_t(discovery().ordinals.size()); }

void device_describe(int32_t device, char* out, size_t capacity) {
  if (out == nullptr || capacity == 0) return;
  const Discovery& d = discovery();
  if (device < 0 || size_t(device) >= d.ordinals.size()) {
    std::snprintf(out, capacity, "no CUDA device %d", int(device));
    return;
  }
  const DeviceInfo& i = d.info[size_t(device)];
  std::snprintf(out, capacity, "%s (sm_%d%d, %d SMs, %.1f GiB, %.0f GB/s peak)", i.name.c_str(),
                i.major, i.minor, i.sms, double(i.total_memory) / double(1ull << 30), i.peak_gbps);
}

gptoss_status device_open(int32_t device, uint32_t, void** dev_out) {
  const Discovery& d = discovery();
  if (dev_out == nullptr) return fail(gptoss_status_invalid_argument, "device_open: no output");
  if (device < 0 || size_t(device) >= d.ordinals.size())
    return fail(gptoss_status_invalid_argument,
                "no CUDA device " + std::to_string(device) + " (" + std::to_string(d.ordinals.size()) + " usable)");
  auto* dev = new (std::nothrow) Device;
  if (dev == nullptr) return fail(gptoss_status_insufficient_memory, "device_open");
  dev->ordinal = d.ordinals[size_t(device)];
  dev->info = d.info[size_t(device)];
  gptoss_status st = dev->activate();
  void* mapped = nullptr;
  if (st == gptoss_status_success) {
    if (cudaError_t e = cudaHostAlloc(&mapped, sizeof(DeviceError), cudaHostAllocMapped); e != cudaSuccess) {
      st = fail(e, "device_open: error record");
    } else if (cudaError_t e2 = cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev->error_device), mapped, 0);
               e2 != cudaSuccess) {
      cudaFreeHost(mapped);
      st = fail(e2, "device_open: error record");
    }
  }
  if (st != gptoss_status_success) {
    delete dev;
    return st;
  }
  dev->error_host = static_cast<DeviceError*>(mapped);
  *dev->error_host = DeviceError{};
  dev->uploader = std::make_unique<Uploader>(dev->ordinal);
  char desc[256];
  device_describe(device, desc, sizeof desc);
  log(gptoss_log_level_info, std::string("device ") + std::to_string(device) + ": " + desc);
  *dev_out = dev;
  return gptoss_status_success;
}

void device_close(void* dev_) {
  auto* dev = static_cast<Device*>(dev_);
  if (dev == nullptr) return;
  dev->activate();
  dev->uploader.reset();  // its thread ends after the copies it still had
  cudaDeviceSynchronize();
  for (const auto& [bytes, p] : dev->cached) cudaFree(p);
  for (const auto& [p, bytes] : dev->buffers) cudaFree(p);  // leaked by the caller: still ours
  cudaFreeHost(dev->error_host);
  delete dev;
}

gptoss_status device_set_precision(void* dev, gptoss_precision precision) {
  if (dev == nullptr) return fail(gptoss_status_invalid_argument, "device_set_precision: no device");
  if (precision != gptoss_precision_fast && precision != gptoss_precision_exact)
    return fail(gptoss_status_invalid_argument, "unknown precision " + std::to_string(int(precision)));
  static_cast<Device*>(dev)->exact = precision == gptoss_precision_exact;
  return gptoss_status_success;
}

const char* last_error(void*) { return error_text(); }

gptoss_status stream_create(void* dev_, void** stream_out) {
  auto* dev = static_cast<Device*>(dev_);
  if (dev == nullptr || stream_out == nullptr) return fail(gptoss_status_invalid_argument, "stream_create");
  if (gptoss_status st = dev->activate(); st != gptoss_status_success) return st;
  auto* s = new (std::nothrow) Stream;
  if (s == nullptr) return fail(gptoss_status_insufficient_memory, "stream_create");
  s->dev = dev;
  if (cudaError_t e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking); e != cudaSuccess) {
    delete s;
    return fail(e, "cudaStreamCreate");
  }
  *stream_out = s;
  return gptoss_status_success;
}

void stream_destroy(void*, void* stream) {
  auto* s = static_cast<Stream*>(stream);
  if (s == nullptr) return;
  s->dev->activate();
  cudaStreamSynchronize(s->stream);
  cudaStreamDestroy(s->stream);
  delete s;
}

// Waits for the stream; a fault inside a kernel, or bad data a kernel reported, becomes this
// call's status.
gptoss_status synchronize(Stream& s, const char* what) {
  if (cudaError_t e = cudaStreamSynchronize(s.stream); e != cudaSuccess) return fail(e, what);
  return s.dev->take_device_error();
}

gptoss_status stream_synchronize(void* stream) {
  if (stream == nullptr) return fail(gptoss_status_invalid_argument, "stream_synchronize: no stream");
  Stream& s = stream_of(stream);
  if (gptoss_status st = s.dev->activate(); st != gptoss_status_success) return st;
  return synchronize(s, "stream synchronize");
}

// Buffers: cudaMalloc is slow and synchronises the device, and the ABI 1 core allocates a
// step's activations anew every forward step; freed blocks are therefore kept (up to 256 MiB
// each, 2 GiB in all) and handed out again to a request of the same rounded size. Every block
// is zero-filled when handed out, as the CPU backend's are.
constexpr size_t kCacheMaxBlock = size_t(256) << 20;
constexpr size_t kCacheMaxTotal = size_t(2) << 30;

size_t round_size(size_t bytes) {
  const size_t g = bytes <= (size_t(1) << 20) ? 4096 : (size_t(2) << 20);
  return (std::max<size_t>(bytes, 1) + g - 1) / g * g;
}

gptoss_status buffer_alloc(void* dev_, size_t bytes, void** buf_out) {
  auto* dev = static_cast<Device*>(dev_);
  if (dev == nullptr || buf_out == nullptr) return fail(gptoss_status_invalid_argument, "buffer_alloc");
  if (gptoss_status st = dev->activate(); st != gptoss_status_success) return st;
  const size_t size = round_size(bytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(dev->mutex);
    auto it = dev->cached.find(size);
    if (it != dev->cached.end()) {
      p = it->second;
      dev->cached.erase(it);
      dev->cached_bytes -= size;
    }
  }
  if (p == nullptr) {
    cudaError_t e = cudaMalloc(&p, size);
    if (e == cudaErrorMemoryAllocation) {  // give the cache back and try once more
      cudaGetLastError();
      std::lock_guard<std::mutex> lock(dev->mutex);
      for (const auto& [b, q] : dev->cached) cudaFree(q);
      dev->cached.clear();
      dev->cached_bytes = 0;
      e = cudaMalloc(&p, size);
    }
    if (e != cudaSuccess)
      return fail(e, "buffer_alloc of " + std::to_string(bytes) + " bytes on " + dev->info.name);
  }
  // The legacy stream's memset, waited for: no stream of ours can see the block before.
  cudaError_t e = cudaMemset(p, 0, size);
  if (e == cudaSuccess) e = cudaStreamSynchronize(cudaStreamLegacy);
  if (e != cudaSuccess) {
    cudaFree(p);
    return fail(e, "buffer_alloc: zero fill");
  }
  try {
    std::lock_guard<std::mutex> lock(dev->mutex);
    dev->buffers.emplace(p, size);
  } catch (const std::bad_alloc&) {
    cudaFree(p);
    return fail(gptoss_status_insufficient_memory, "buffer_alloc");
  }
  *buf_out = p;
  return gptoss_status_success;
}

void buffer_free(void* dev_, void* buf) {
  auto* dev = static_cast<Device*>(dev_);
  if (dev == nullptr || buf == nullptr) return;
  std::lock_guard<std::mutex> lock(dev->mutex);
  auto it = dev->buffers.find(buf);
  if (it == dev->buffers.end()) return;  // not ours: ignore rather than corrupt the heap
  const size_t size = it->second;
  dev->buffers.erase(it);
  if (size <= kCacheMaxBlock && dev->cached_bytes + size <= kCacheMaxTotal) {
    try {
      dev->cached.emplace(size, buf);
      dev->cached_bytes += size;
      return;
    } catch (const std::bad_alloc&) {
    }
  }
  dev->activate();
  cudaFree(buf);
}

gptoss_status buffer_write(void* stream, void* buf, size_t offset, const void* host, size_t bytes) {
  if (stream == nullptr || buf == nullptr || (bytes > 0 && host == nullptr))
    return fail(gptoss_status_invalid_argument, "buffer_write: null argument");
  Stream& s = stream_of(stream);
  if (gptoss_status st = s.dev->activate(); st != gptoss_status_success) return st;
  // From pageable memory the copy is staged before this returns: `host` may be reused.
  const cudaError_t e = cudaMemcpyAsync(static_cast<char*>(buf) + offset, host, bytes,
                                        cudaMemcpyHostToDevice, s.stream);
  return e == cudaSuccess ? gptoss_status_success : fail(e, "buffer_write");
}

gptoss_status buffer_read(void* stream, const void* buf, size_t offset, void* host, size_t bytes) {
  if (stream == nullptr || buf == nullptr || (bytes > 0 && host == nullptr))
    return fail(gptoss_status_invalid_argument, "buffer_read: null argument");
  Stream& s = stream_of(stream);
  if (gptoss_status st = s.dev->activate(); st != gptoss_status_success) return st;
  const cudaError_t e = cudaMemcpyAsync(host, static_cast<const char*>(buf) + offset, bytes,
                                        cudaMemcpyDeviceToHost, s.stream);
  if (e != cudaSuccess) return fail(e, "buffer_read");
  return synchronize(s, "buffer_read");
}

gptoss_status buffer_copy(void* stream, void* dst, size_t dst_offset, const void* src,
                          size_t src_offset, size_t bytes) {
  if (stream == nullptr || dst == nullptr || src == nullptr)
    return fail(gptoss_status_invalid_argument, "buffer_copy: null argument");
  Stream& s = stream_of(stream);
  if (gptoss_status st = s.dev->activate(); st != gptoss_status_success) return st;
  const cudaError_t e = cudaMemcpyAsync(static_cast<char*>(dst) + dst_offset,
                                        static_cast<const char*>(src) + src_offset, bytes,
                                        cudaMemcpyDeviceToDevice, s.stream);
  return e == cudaSuccess ? gptoss_status_success : fail(e, "buffer_copy");
}

}  // namespace

const gptoss_backend_api kApi = {
    /* .struct_size        = */ sizeof(gptoss_backend_api),
    /* .abi_major          = */ GPTOSS_BACKEND_ABI_MAJOR,
    /* .abi_minor          = */ GPTOSS_BACKEND_ABI_MINOR,
    /* .name               = */ "cuda",
    /* .device_count       = */ device_count,
    /* .device_describe    = */ device_describe,
    /* .device_open        = */ device_open,
    /* .device_close       = */ device_close,
    /* .last_error         = */ last_error,
    /* .stream_create      = */ stream_create,
    /* .stream_destroy     = */ stream_destroy,
    /* .stream_synchronize = */ stream_synchronize,
    /* .buffer_alloc       = */ buffer_alloc,
    /* .buffer_free        = */ buffer_free,
    /* .buffer_write       = */ buffer_write,
    /* .buffer_read        = */ buffer_read,
    /* .buffer_copy        = */ buffer_copy,
    /* .weight_upload      = */ weight_upload,
    /* .weight_free        = */ weight_free,
    /* .embedding          = */ op_embedding,
    /* .rmsnorm            = */ op_rmsnorm,
    /* .linear             = */ op_linear,
    /* .rope               = */ op_rope,
    /* .kv_write           = */ op_kv_write,
    /* .attention          = */ op_attention,
    /* .router             = */ op_router,
    /* .moe                = */ op_moe,
    /* .add                = */ op_add,
    /* .device_set_precision = */ device_set_precision,
};

}  // namespace gptoss::cuda

extern "C" {

// 0 without a usable device, so that "auto" picks the CPU; the reason is
// gptoss_backend_unavailable_reason's, which the registry logs.
GPTOSS_PLUGIN_EXPORT uint32_t gptoss_backend_score(void) {
  return gptoss::cuda::device_count() > 0 ? 100 : 0;
}

GPTOSS_PLUGIN_EXPORT const char* gptoss_backend_unavailable_reason(void) {
  return gptoss::cuda::discovery().reason.c_str();
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
