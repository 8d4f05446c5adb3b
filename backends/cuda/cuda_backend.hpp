#pragma once
// Internal types of the CUDA backend plugin (host side): devices, streams, buffers, weights,
// KV caches, and the mapping of CUDA errors onto gptoss_status with the CUDA error text.
//
// Handles: a buffer (or a view of one) is the device address itself; a device, stream,
// weight or KV cache is a pointer to the struct below; an event is a cudaEvent_t.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gptoss/backend.h"
#include "gpu_runtime.hpp"
#include "kernels.hpp"
#include "step_graph.hpp"
#include "uploader.hpp"

namespace gptoss::cuda {

extern const gptoss_host_api* g_host;
void log(gptoss_log_level level, const std::string& message);

// The message last_error() returns: per thread, since the core reads it on the thread whose
// call failed, and several threads may drive one device.
void set_error(std::string message);
const char* error_text();

// status for a CUDA error, with "what: <cudaGetErrorName>: <cudaGetErrorString>" recorded.
// Errors that leave the CUDA context unusable (a fault inside a kernel) say so.
gptoss_status fail(cudaError_t e, const std::string& what);
gptoss_status fail(gptoss_status st, const std::string& message);

struct DeviceInfo {
  std::string name;
  std::string arch;  // sm_90, gfx90a
  int sms = 0;       // SMs (NVIDIA), compute units (AMD)
  size_t total_memory = 0;
  double peak_gbps = 0.0;  // memory clock x bus width
};

struct Device {
  int ordinal = 0;
  DeviceInfo info;
  bool exact = false;  // gptoss_precision_exact: fp32 CUDA-core paths only
  // Every call takes the kernels whose arithmetic for a token does not depend on the call's
  // other tokens (ops_util.hpp, kernel_choice); GPTOSS_CUDA_BATCH_INVARIANT=0 turns it off.
  bool batch_invariant = true;
  // Live allocations (buffers, KV layers, weights are not listed), by start address: a view
  // is checked against the allocation it lies in.
  std::mutex mutex;
  std::map<uintptr_t, size_t> allocations;
  // Counts what moves memory a captured decode step may point into (see StepGraph).
  std::atomic<uint64_t> epoch{0};
  std::unique_ptr<Uploader> uploader;  // weights: pinned staging on a thread of its own
  bool async_weights = false;          // between weights_begin and weights_end

  // Copies the backend makes outside any op (kv_grow): a stream of the device's own, since
  // the ops' streams are non-blocking and so not ordered with the legacy stream.
  cudaStream_t copy_stream = nullptr;

  // Makes this device current on the calling thread (CUDA keeps it per thread).
  gptoss_status activate() const;
  // Bytes from p to the end of the allocation holding it (0 if none of this device's does).
  size_t extent(const void* p);
};

// The first bad-data report of a stream's kernels (token id, KV slot, ...), which the
// stream's synchronising calls turn into their status (ABI 2: a failure is reported by the
// next synchronising call on that stream). The kernels claim it with atomicCAS in device
// memory; each synchronisation copies it back to pinned host memory on the stream, ahead of
// the wait. Not host-mapped memory: a GPU's atomics on host memory cross PCIe, which on AMD
// GPUs needs PCIe atomics from the platform (and CUDA makes them atomic only for the GPU).
class ErrorRecord {
 public:
  ~ErrorRecord();
  // The record of `stream`, cleared on it.
  gptoss_status create(cudaStream_t stream);
  DeviceError* device() const { return device_; }
  // Waits for `stream` (a failed wait is this call's status, "what: <CUDA error>"), then
  // turns the report its kernels left into this call's status, and clears it.
  gptoss_status sync_take(cudaStream_t stream, const std::string& what);

 private:
  DeviceError* host_ = nullptr;    // pinned
  DeviceError* device_ = nullptr;  // device memory
};

// Scratch memory of a stream: one device block, grown (never shrunk) when an op needs more.
// Ops carve it per call; nothing in it outlives the op that carved it.
class Workspace {
 public:
  ~Workspace();
  // A block of at least `bytes`. Growing waits for the stream (the old block may be in use)
  // and moves the device's epoch; under stream capture it fails instead (the step then runs
  // eagerly, see StepGraph).
  gptoss_status reserve(Device& dev, cudaStream_t s, size_t bytes, void** out);

 private:
  void* block_ = nullptr;
  size_t size_ = 0;
};

// Host memory a step's buffer_writes go through: pinned, so that the copies are truly
// asynchronous, reused from the start by every step (the core synchronises after each).
class Staging {
 public:
  ~Staging();
  void reset();
  // `bytes` of pinned memory valid until the next reset(); null if none could be had.
  void* take(size_t bytes);

 private:
  std::vector<std::pair<void*, size_t>> blocks_;  // the last one is current
  size_t used_ = 0;
};

struct Stream {
  Device* dev = nullptr;
  cudaStream_t stream = nullptr;
  ErrorRecord errors;
  Workspace workspace;
  Staging staging;
  StepGraph graph;
  bool in_step = false;
  // Last RoPE table (parameters and head size) computed on the host.
  RopeTable rope{};
  gptoss_rope_params rope_params{};
  size_t rope_head_dim = 0;
};

// Carves consecutive 256-byte-aligned pieces out of a workspace block.
class Carve {
 public:
  explicit Carve(void* base = nullptr) : p_(static_cast<char*>(base)) {}
  template <typename T>
  T* take(size_t count) {
    T* r = reinterpret_cast<T*>(p_ + used_);
    used_ += (count * sizeof(T) + 255) / 256 * 256;
    return r;
  }
  size_t used() const { return used_; }

 private:
  char* p_;
  size_t used_ = 0;
};

// A weight on the device, in the layout the kernels take: dense matrices bf16 or f32 as the
// checkpoint has them (other dtypes widened to f32), vectors and bias tables f32, MXFP4
// experts as the checkpoint stores them.
struct Weight {
  enum class Kind { dense, vector, mxfp4 } kind = Kind::dense;
  std::string name;
  int64_t shape[4] = {0, 0, 0, 0};
  uint32_t ndim = 0;
  int32_t first_expert = 0;  // expert tensors: the slice's first expert (expert parallelism)
  DenseView dense{};         // dense (also the view of a vector: rows = product of outer dims)
  Mxfp4View mxfp4{};         // mxfp4
  void* block = nullptr;     // the device allocation holding it all
  size_t bytes = 0;
  const float* f32() const { return static_cast<const float*>(dense.data); }
};

// A paged K/V cache in this backend's layout: per layer, a K and a V array of slots
// (page * page_size + offset) of n_kv_heads * head_dim elements, f32 or bf16.
struct KvCache {
  gptoss_kv_desc desc{};
  Dt dt = Dt::f32;
  int64_t kv_dim = 0;
  size_t pages = 0;
  std::vector<void*> k, v;       // [n_layers]
  std::vector<size_t> capacity;  // pages each array has room for, K and V of layer l at 2l, 2l + 1
  int64_t slots() const { return int64_t(pages) * desc.page_size; }
};

inline Device& device_of(gptoss_backend_device_t d) { return *reinterpret_cast<Device*>(d); }
inline Stream& stream_of(gptoss_backend_stream_t s) { return *reinterpret_cast<Stream*>(s); }
inline const Weight& weight_of(gptoss_backend_weight_t w) { return *reinterpret_cast<const Weight*>(w); }
inline KvCache& kv_of(gptoss_backend_kv_t kv) { return *reinterpret_cast<KvCache*>(kv); }
template <typename T = void>
T* ptr(gptoss_backend_buffer_t b) {
  return reinterpret_cast<T*>(b);
}

// weights.cpp
gptoss_status weights_begin(gptoss_backend_device_t dev, uint64_t total_bytes, size_t n_tensors);
gptoss_status weight_upload(gptoss_backend_device_t dev, const gptoss_tensor_desc* desc,
                            gptoss_backend_weight_t* weight_out);
gptoss_status weights_end(gptoss_backend_device_t dev);
void weight_free(gptoss_backend_device_t dev, gptoss_backend_weight_t weight);

// kv.cpp
gptoss_status kv_create(gptoss_backend_device_t dev, const gptoss_kv_desc* desc, size_t n_pages,
                        gptoss_backend_kv_t* kv_out);
gptoss_status kv_grow(gptoss_backend_device_t dev, gptoss_backend_kv_t kv, size_t n_pages);
void kv_destroy(gptoss_backend_device_t dev, gptoss_backend_kv_t kv);

}  // namespace gptoss::cuda
