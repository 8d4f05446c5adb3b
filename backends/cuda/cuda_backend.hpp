#pragma once
// Internal types of the CUDA backend plugin (host side): devices, streams, weights, and the
// mapping of CUDA errors onto gptoss_status with the CUDA error text.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <cuda_runtime_api.h>

#include "gptoss/backend.h"
#include "kernels.hpp"
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
  int major = 0, minor = 0;
  int sms = 0;
  size_t total_memory = 0;
  size_t max_smem_optin = 0;   // bytes of dynamic shared memory one block may opt into
  double peak_gbps = 0.0;      // memory clock x bus width
};

struct Device {
  int ordinal = 0;
  DeviceInfo info;
  bool exact = false;          // gptoss_precision_exact: fp32 CUDA-core paths only
  std::mutex mutex;            // buffers, cache
  std::unordered_map<void*, size_t> buffers;   // live buffer_alloc blocks and their sizes
  std::multimap<size_t, void*> cached;         // freed blocks kept for reuse, by size
  size_t cached_bytes = 0;
  // First bad-data report of any kernel (host-mapped, read at synchronising calls).
  DeviceError* error_host = nullptr;
  DeviceError* error_device = nullptr;
  std::unique_ptr<Uploader> uploader;  // weights: pinned staging on a thread of its own

  // Makes this device current on the calling thread (CUDA keeps it per thread).
  gptoss_status activate() const;
  // Bytes of the buffer_alloc block that starts at p (0 if p starts none).
  size_t buffer_size(const void* p);
  // After a synchronisation: a kernel's bad-data report becomes this call's status.
  gptoss_status take_device_error();
};

// Scratch memory of a stream: one device block, grown (never shrunk) when an op needs more.
// Ops carve it per call; nothing in it outlives the op that carved it.
class Workspace {
 public:
  ~Workspace();
  // A block of at least `bytes`; growing it waits for the stream (the old block may be in use).
  gptoss_status reserve(cudaStream_t s, size_t bytes, void** out);

 private:
  void* block_ = nullptr;
  size_t size_ = 0;
};

struct Stream {
  Device* dev = nullptr;
  cudaStream_t stream = nullptr;
  Workspace workspace;
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

// A weight on the device, in the layout the kernels want: dense matrices bf16 or f32 as the
// checkpoint has them (other dtypes widened to f32), vectors and bias tables f32, MXFP4
// experts as the checkpoint stores them.
struct Weight {
  enum class Kind { dense, vector, mxfp4 } kind = Kind::dense;
  std::string name;
  int64_t shape[4] = {0, 0, 0, 0};
  uint32_t ndim = 0;
  DenseView dense{};     // dense (also the view of a vector: rows = product of outer dims)
  Mxfp4View mxfp4{};     // mxfp4
  void* block = nullptr;           // the device allocation holding it all
  size_t bytes = 0;
  const float* f32() const { return static_cast<const float*>(dense.data); }
};

inline Stream& stream_of(void* s) { return *static_cast<Stream*>(s); }
inline const Weight& weight_of(const void* w) { return *static_cast<const Weight*>(w); }

gptoss_status weight_upload(void* dev, const gptoss_tensor_desc* desc, void** weight_out);
void weight_free(void* dev, void* weight);

}  // namespace gptoss::cuda
