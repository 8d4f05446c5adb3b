// Devices (discovery, open, close, memory), streams, events and forward steps.
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "cuda_backend.hpp"
#include "driver_check.hpp"
#include "slots.hpp"

namespace gptoss::cuda {

gptoss_status Device::activate() const {
  const cudaError_t e = cudaSetDevice(ordinal);
  return e == cudaSuccess ? gptoss_status_success : fail(e, "cudaSetDevice");
}

size_t Device::extent(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = allocations.upper_bound(a);
  if (it == allocations.begin()) return 0;
  --it;
  return a < it->first + it->second ? it->first + it->second - a : 0;
}

ErrorRecord::~ErrorRecord() {
  if (host_ != nullptr) cudaFreeHost(host_);
  if (device_ != nullptr) cudaFree(device_);
}

gptoss_status ErrorRecord::create(cudaStream_t stream) {
  void* pinned = nullptr;
  if (cudaError_t e = cudaHostAlloc(&pinned, sizeof(DeviceError), cudaHostAllocDefault);
      e != cudaSuccess)
    return fail(e, "error record");
  host_ = static_cast<DeviceError*>(pinned);
  *host_ = DeviceError{};
  void* dev = nullptr;
  if (cudaError_t e = cudaMalloc(&dev, sizeof(DeviceError)); e != cudaSuccess)
    return fail(e, "error record");
  device_ = static_cast<DeviceError*>(dev);
  // Clear before any kernel of the stream runs (on it, and waited for: once per stream).
  cudaError_t e = cudaMemsetAsync(device_, 0, sizeof(DeviceError), stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  return e == cudaSuccess ? gptoss_status_success : fail(e, "error record");
}

gptoss_status ErrorRecord::sync_take(cudaStream_t stream, const std::string& what) {
  cudaError_t r =
      cudaMemcpyAsync(host_, device_, sizeof(DeviceError), cudaMemcpyDeviceToHost, stream);
  if (r == cudaSuccess) r = cudaStreamSynchronize(stream);
  if (r != cudaSuccess) return fail(r, what);
  const DeviceError e = *host_;
  if (e.code == kErrNone) return gptoss_status_success;
  // Cleared on the stream (later kernels are ordered after it), waited for: rare.
  r = cudaMemsetAsync(device_, 0, sizeof(DeviceError), stream);
  if (r == cudaSuccess) r = cudaStreamSynchronize(stream);
  if (r != cudaSuccess) return fail(r, what + ": clearing the error record");
  const std::string v = std::to_string(e.value), lim = std::to_string(e.limit);
  switch (e.code) {
    case kErrTokenId:
      return fail(gptoss_status_invalid_argument,
                  "embedding: token id " + v + " out of range (vocabulary " + lim + ")");
    case kErrKvSlot:
      return fail(gptoss_status_invalid_argument,
                  "kv_write: slot " + v + " outside the KV cache (" + lim + " slots)");
    case kErrAttnSeq:
      return fail(gptoss_status_invalid_argument,
                  "attention: sequence " + v + " outside the call's " + lim + " rows, or longer than max_q");
    case kErrPageTable:
      return fail(gptoss_status_invalid_argument,
                  "attention: a key outside the page table or the cache (" + v + ", limit " + lim + ")");
    case kErrSampleRow:
      return fail(gptoss_status_invalid_argument, "sample: row " + v + " has a parameter out of range");
    default:
      return fail(gptoss_status_internal, "a kernel reported error code " + std::to_string(e.code));
  }
}

namespace {

// Devices this build can run on (device_usable: compute capability 8.0 and later for CUDA,
// SASS for the listed architectures and PTX JIT for later ones; the built gfx architectures
// for HIP). Found once; the reason when there are none.
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
      if (std::string why; !device_usable(p, &why)) {
        skipped += std::string(skipped.empty() ? "" : "; ") + why;
        continue;
      }
      DeviceInfo info;
      info.name = p.name;
      info.arch = arch_name(p);
      info.sms = p.multiProcessorCount;
      info.total_memory = p.totalGlobalMem;
      int clock_khz = 0, bus_bits = 0;
      cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, i);
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, i);
      info.peak_gbps = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;  // double data rate
      r.ordinals.push_back(i);
      r.info.push_back(info);
    }
    if (r.ordinals.empty())
      r.reason = std::string("no ") + kGpuApi + " device" +
                 (n == 0 ? std::string() : " this build can run on (" + skipped + ")");
    return r;
  }();
  return d;
}

// Waits for the stream; a fault inside a kernel, or bad data a kernel reported, becomes this
// call's status.
gptoss_status synchronize(Stream& s, const char* what) {
  return s.errors.sync_take(s.stream, what);
}

// GPTOSS_CUDA_BATCH_INVARIANT=0: calls of many tokens may take the faster kernels whose
// rounding depends on the call's size (ops_util.hpp, kernel_choice). Any other value, or
// none, keeps every call batch-invariant.
bool batch_invariant_requested() {
  const char* v = std::getenv("GPTOSS_CUDA_BATCH_INVARIANT");
  return v == nullptr || std::strcmp(v, "0") != 0;
}

}  // namespace

const char* unavailable_reason() { return discovery().reason.c_str(); }

namespace slots {

int32_t device_count() { return int32_t(discovery().ordinals.size()); }

void device_describe(int32_t device, char* out, size_t capacity) {
  if (out == nullptr || capacity == 0) return;
  const Discovery& d = discovery();
  if (device < 0 || size_t(device) >= d.ordinals.size()) {
    std::snprintf(out, capacity, "no %s device %d", kGpuApi, int(device));
    return;
  }
  const DeviceInfo& i = d.info[size_t(device)];
  std::snprintf(out, capacity, "%s (%s, %d %s, %.1f GiB, %.0f GB/s peak)", i.name.c_str(), i.arch.c_str(),
                i.sms, kUnits, double(i.total_memory) / double(1ull << 30), i.peak_gbps);
}

gptoss_status device_open(int32_t device, uint32_t, Dev* dev_out) {
  const Discovery& d = discovery();
  if (dev_out == nullptr) return fail(gptoss_status_invalid_argument, "device_open: no output");
  if (device < 0 || size_t(device) >= d.ordinals.size())
    return fail(gptoss_status_invalid_argument, std::string("no ") + kGpuApi + " device " +
                                                    std::to_string(device) + " (" +
                                                    std::to_string(d.ordinals.size()) + " usable)");
  auto* dev = new (std::nothrow) Device;
  if (dev == nullptr) return fail(gptoss_status_insufficient_memory, "device_open");
  dev->ordinal = d.ordinals[size_t(device)];
  dev->info = d.info[size_t(device)];
  if (gptoss_status st = dev->activate(); st != gptoss_status_success) {
    delete dev;
    return st;
  }
  if (cudaError_t e = cudaStreamCreateWithFlags(&dev->copy_stream, cudaStreamNonBlocking);
      e != cudaSuccess) {
    delete dev;
    return fail(e, "device_open: copy stream");
  }
  dev->batch_invariant = batch_invariant_requested();
  dev->uploader = std::make_unique<Uploader>(dev->ordinal);
  char desc[256];
  device_describe(device, desc, sizeof desc);
  log(gptoss_log_level_info, std::string("device ") + std::to_string(device) + ": " + desc);
  *dev_out = reinterpret_cast<Dev>(dev);
  return gptoss_status_success;
}

void device_close(Dev dev_) {
  if (dev_ == nullptr) return;
  Device* dev = &device_of(dev_);
  dev->activate();
  dev->uploader.reset();  // its thread ends after the copies it still had
  cudaDeviceSynchronize();
  for (const auto& [p, bytes] : dev->allocations)
    cudaFree(reinterpret_cast<void*>(p));  // leaked by the caller
  if (dev->copy_stream != nullptr) cudaStreamDestroy(dev->copy_stream);
  delete dev;
}

const char* last_error(Dev) { return error_text(); }

gptoss_status device_set_precision(Dev dev, gptoss_precision precision) {
  if (dev == nullptr) return fail(gptoss_status_invalid_argument, "device_set_precision: no device");
  if (precision != gptoss_precision_fast && precision != gptoss_precision_exact)
    return fail(gptoss_status_invalid_argument, "unknown precision " + std::to_string(int(precision)));
  device_of(dev).exact = precision == gptoss_precision_exact;
  return gptoss_status_success;
}

// Batch invariance is declared where cuda.model's invariance test has passed on such a GPU:
// the CUDA build on an H200 (docs/backends.md), with the invariant kernels on (the default).
// The HIP build shares the kernels but has not run on AMD hardware, so it declares nothing.
gptoss_status device_properties(Dev dev, gptoss_backend_device_properties* out) {
  if (dev == nullptr || out == nullptr)
    return fail(gptoss_status_invalid_argument, "device_properties: null argument");
  const Device& d = device_of(dev);
  if (out->struct_size >= offsetof(gptoss_backend_device_properties, flags) + sizeof out->flags) {
#if defined(GPTOSS_HIP)
    out->flags = 0;
#else
    out->flags = d.batch_invariant ? GPTOSS_DEVICE_BATCH_INVARIANT : 0u;
#endif
  }
  if (out->struct_size >=
      offsetof(gptoss_backend_device_properties, kernels) + sizeof out->kernels) {
    // The ABI asks for static storage: each architecture's name is kept once for the process.
    static std::mutex mutex;
    static std::set<std::string> names;
    std::lock_guard<std::mutex> lock(mutex);
    out->kernels = names.insert(d.info.arch).first->c_str();
  }
  return gptoss_status_success;
}

gptoss_status device_memory_info(Dev dev, size_t* free_bytes, size_t* total_bytes) {
  if (dev == nullptr || free_bytes == nullptr || total_bytes == nullptr)
    return fail(gptoss_status_invalid_argument, "device_memory_info: null argument");
  if (gptoss_status st = device_of(dev).activate(); st != gptoss_status_success) return st;
  const cudaError_t e = cudaMemGetInfo(free_bytes, total_bytes);
  return e == cudaSuccess ? gptoss_status_success : fail(e, "device_memory_info");
}

gptoss_status stream_create(Dev dev, Stm* stream_out) {
  if (dev == nullptr || stream_out == nullptr) return fail(gptoss_status_invalid_argument, "stream_create");
  if (gptoss_status st = device_of(dev).activate(); st != gptoss_status_success) return st;
  auto* s = new (std::nothrow) Stream;
  if (s == nullptr) return fail(gptoss_status_insufficient_memory, "stream_create");
  s->dev = &device_of(dev);
  if (cudaError_t e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking); e != cudaSuccess) {
    delete s;
    return fail(e, "cudaStreamCreate");
  }
  if (gptoss_status st = s->errors.create(s->stream); st != gptoss_status_success) {
    cudaStreamDestroy(s->stream);
    delete s;
    return st;
  }
  *stream_out = reinterpret_cast<Stm>(s);
  return gptoss_status_success;
}

void stream_destroy(Dev, Stm stream) {
  if (stream == nullptr) return;
  Stream* s = &stream_of(stream);
  s->dev->activate();
  cudaStreamSynchronize(s->stream);
  s->graph.drop();
  cudaStreamDestroy(s->stream);
  delete s;
}

gptoss_status stream_synchronize(Stm stream) {
  if (stream == nullptr) return fail(gptoss_status_invalid_argument, "stream_synchronize: no stream");
  Stream& s = stream_of(stream);
  if (gptoss_status st = s.dev->activate(); st != gptoss_status_success) return st;
  return synchronize(s, "stream synchronize");
}

gptoss_status event_create(Dev dev, Ev* ev_out) {
  if (dev == nullptr || ev_out == nullptr) return fail(gptoss_status_invalid_argument, "event_create");
  if (gptoss_status st = device_of(dev).activate(); st != gptoss_status_success) return st;
  cudaEvent_t e = nullptr;
  if (cudaError_t r = cudaEventCreateWithFlags(&e, cudaEventDisableTiming); r != cudaSuccess)
    return fail(r, "event_create");
  *ev_out = reinterpret_cast<Ev>(e);
  return gptoss_status_success;
}

void event_destroy(Dev dev, Ev ev) {
  if (ev == nullptr) return;
  if (dev != nullptr) device_of(dev).activate();
  cudaEventDestroy(reinterpret_cast<cudaEvent_t>(ev));
}

// Events order streams of several devices: a step that uses them runs eagerly (no graph).
gptoss_status event_record(Stm stream, Ev ev) {
  if (stream == nullptr || ev == nullptr) return fail(gptoss_status_invalid_argument, "event_record");
  Stream& s = stream_of(stream);
  OpSignature not_replayable;
  not_replayable.overflow = true;
  return s.graph.op(not_replayable, [&s, ev] {
    if (gptoss_status st = s.dev->activate(); st != gptoss_status_success) return st;
    const cudaError_t e = cudaEventRecord(reinterpret_cast<cudaEvent_t>(ev), s.stream);
    return e == cudaSuccess ? gptoss_status_success : fail(e, "event_record");
  });
}

gptoss_status stream_wait_event(Stm stream, Ev ev) {
  if (stream == nullptr || ev == nullptr) return fail(gptoss_status_invalid_argument, "stream_wait_event");
  Stream& s = stream_of(stream);
  OpSignature not_replayable;
  not_replayable.overflow = true;
  return s.graph.op(not_replayable, [&s, ev] {
    if (gptoss_status st = s.dev->activate(); st != gptoss_status_success) return st;
    const cudaError_t e = cudaStreamWaitEvent(s.stream, reinterpret_cast<cudaEvent_t>(ev), 0);
    return e == cudaSuccess ? gptoss_status_success : fail(e, "stream_wait_event");
  });
}

// A decode-shaped step (one token per sequence) may be captured as a CUDA graph and replayed
// (step_graph.hpp); every step resets the stream's staging memory for its buffer_writes.
gptoss_status step_begin(Stm stream, const gptoss_step_hints* hints) {
  if (stream == nullptr || hints == nullptr || hints->struct_size < sizeof(gptoss_step_hints))
    return fail(gptoss_status_invalid_argument, "step_begin: no stream or hints");
  Stream& s = stream_of(stream);
  if (gptoss_status st = s.dev->activate(); st != gptoss_status_success) return st;
  s.in_step = true;
  s.staging.reset();
  const bool decode = hints->n_tokens > 0 && hints->n_tokens == hints->n_seqs;
  s.graph.begin(s.stream, decode, s.dev->epoch.load());
  return gptoss_status_success;
}

gptoss_status step_end(Stm stream) {
  if (stream == nullptr) return fail(gptoss_status_invalid_argument, "step_end: no stream");
  Stream& s = stream_of(stream);
  if (gptoss_status st = s.dev->activate(); st != gptoss_status_success) return st;
  s.in_step = false;
  return s.graph.end();
}

}  // namespace slots
}  // namespace gptoss::cuda
