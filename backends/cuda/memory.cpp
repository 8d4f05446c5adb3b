// Device memory: buffers and their views, copies, the streams' workspaces and staging memory.
// A buffer handle is the device address itself (a view: the address plus its offset); the
// device lists its allocations so that kernels can be given the bounds a view lies in.
#include <algorithm>
#include <cstring>
#include <string>

#include "cuda_backend.hpp"
#include "slots.hpp"

namespace gptoss::cuda {

Workspace::~Workspace() {
  if (block_ != nullptr) cudaFree(block_);
}

gptoss_status Workspace::reserve(Device& dev, cudaStream_t s, size_t bytes, void** out) {
  if (bytes <= size_ && block_ != nullptr) {
    *out = block_;
    return gptoss_status_success;
  }
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(s, &capturing);
  if (capturing != cudaStreamCaptureStatusNone)  // no allocation inside a captured step
    return fail(gptoss_status_insufficient_resources, "workspace: must grow during a captured step");
  // Grow by half again, so that a slowly growing need does not reallocate every call.
  const size_t want = std::max(bytes, size_ + size_ / 2);
  if (block_ != nullptr) {
    if (cudaError_t e = cudaStreamSynchronize(s); e != cudaSuccess)
      return fail(e, "workspace: stream synchronize");
    cudaFree(block_);
    block_ = nullptr;
    size_ = 0;
    ++dev.epoch;  // a captured step may point into the old block
  }
  if (cudaError_t e = cudaMalloc(&block_, want); e != cudaSuccess) {
    block_ = nullptr;
    return fail(e, "workspace: cudaMalloc of " + std::to_string(want) + " bytes");
  }
  size_ = want;
  *out = block_;
  return gptoss_status_success;
}

Staging::~Staging() {
  for (const auto& [p, n] : blocks_) cudaFreeHost(p);
}

void Staging::reset() {
  // Keep only the largest block: a step that outgrew it got a bigger one, last.
  while (blocks_.size() > 1) {
    cudaFreeHost(blocks_.front().first);
    blocks_.erase(blocks_.begin());
  }
  used_ = 0;
}

void* Staging::take(size_t bytes) {
  bytes = (bytes + 255) / 256 * 256;
  if (blocks_.empty() || used_ + bytes > blocks_.back().second) {
    // A new, bigger block; the old ones may still be read by this step's copies.
    const size_t size =
        std::max<size_t>({bytes, size_t(1) << 20, blocks_.empty() ? 0 : 2 * blocks_.back().second});
    void* p = nullptr;
    if (cudaHostAlloc(&p, size, cudaHostAllocDefault) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    blocks_.push_back({p, size});
    used_ = 0;
  }
  void* p = static_cast<char*>(blocks_.back().first) + used_;
  used_ += bytes;
  return p;
}

namespace slots {

gptoss_status buffer_alloc(Dev dev_, size_t bytes, Buf* buf_out) {
  if (dev_ == nullptr || buf_out == nullptr || bytes == 0)
    return fail(gptoss_status_invalid_argument, "buffer_alloc");
  Device& dev = device_of(dev_);
  if (gptoss_status st = dev.activate(); st != gptoss_status_success) return st;
  void* p = nullptr;
  if (cudaError_t e = cudaMalloc(&p, bytes); e != cudaSuccess)  // 256-byte aligned
    return fail(e, "buffer_alloc of " + std::to_string(bytes) + " bytes on " + dev.info.name);
  std::lock_guard<std::mutex> lock(dev.mutex);
  dev.allocations.emplace(reinterpret_cast<uintptr_t>(p), bytes);
  *buf_out = reinterpret_cast<Buf>(p);
  return gptoss_status_success;
}

void buffer_free(Dev dev_, Buf buf) {
  if (dev_ == nullptr || buf == nullptr) return;
  Device& dev = device_of(dev_);
  {
    std::lock_guard<std::mutex> lock(dev.mutex);
    if (dev.allocations.erase(reinterpret_cast<uintptr_t>(buf)) == 0) return;  // not an allocation of ours
  }
  ++dev.epoch;
  dev.activate();
  cudaFree(ptr(buf));
}

gptoss_status buffer_view(Dev dev, Buf buf, size_t offset, size_t bytes, Buf* view_out) {
  if (dev == nullptr || buf == nullptr || view_out == nullptr || offset % 256 != 0)
    return fail(gptoss_status_invalid_argument, "buffer_view: null argument or offset not a multiple of 256");
  if (device_of(dev).extent(ptr(buf)) < offset + bytes)
    return fail(gptoss_status_invalid_argument, "buffer_view: beyond the buffer");
  *view_out = reinterpret_cast<Buf>(ptr<char>(buf) + offset);
  return gptoss_status_success;
}

// Inside a step, through the stream's pinned staging memory (truly asynchronous); outside,
// from pageable memory, which the driver stages before returning. Either way `host` may be
// reused at once.
gptoss_status buffer_write(Stm stream, Buf buf, size_t offset, const void* host, size_t bytes) {
  if (stream == nullptr || buf == nullptr || (bytes > 0 && host == nullptr))
    return fail(gptoss_status_invalid_argument, "buffer_write: null argument");
  Stream& s = stream_of(stream);
  if (gptoss_status st = s.dev->activate(); st != gptoss_status_success) return st;
  if (bytes == 0) return gptoss_status_success;
  const void* src = host;
  if (s.in_step) {
    if (void* staged = s.staging.take(bytes); staged != nullptr) {
      std::memcpy(staged, host, bytes);
      src = staged;
    }
  }
  auto write = [&s, buf, offset, src, bytes] {
    const cudaError_t e =
        cudaMemcpyAsync(ptr<char>(buf) + offset, src, bytes, cudaMemcpyHostToDevice, s.stream);
    return e == cudaSuccess ? gptoss_status_success : fail(e, "buffer_write");
  };
  if (!s.graph.has_ops()) return write();
  // Writes come before a step's ops (ABI 2); one after them makes the step run eagerly.
  OpSignature not_replayable;
  not_replayable.overflow = true;
  return s.graph.op(not_replayable, write);
}

gptoss_status buffer_read(Stm stream, Buf buf, size_t offset, void* host, size_t bytes) {
  if (stream == nullptr || buf == nullptr || (bytes > 0 && host == nullptr))
    return fail(gptoss_status_invalid_argument, "buffer_read: null argument");
  Stream& s = stream_of(stream);
  if (gptoss_status st = s.dev->activate(); st != gptoss_status_success) return st;
  // An earlier asynchronous failure is reported first, the host memory untouched.
  if (gptoss_status st = s.errors.sync_take(s.stream, "buffer_read"); st != gptoss_status_success)
    return st;
  const cudaError_t e = cudaMemcpy(host, ptr<char>(buf) + offset, bytes, cudaMemcpyDeviceToHost);
  return e == cudaSuccess ? gptoss_status_success : fail(e, "buffer_read");
}

gptoss_status buffer_copy(Stm stream, Buf dst, size_t dst_offset, Buf src, size_t src_offset, size_t bytes) {
  if (stream == nullptr || dst == nullptr || src == nullptr)
    return fail(gptoss_status_invalid_argument, "buffer_copy: null argument");
  Stream& s = stream_of(stream);
  OpSignature sig;
  sig.add(uint32_t(0xC0)).add(dst).add(dst_offset).add(src).add(src_offset).add(bytes);
  return s.graph.op(sig, [&s, dst, dst_offset, src, src_offset, bytes] {
    if (gptoss_status st = s.dev->activate(); st != gptoss_status_success) return st;
    const cudaError_t e = cudaMemcpyAsync(ptr<char>(dst) + dst_offset, ptr<char>(src) + src_offset, bytes,
                                          cudaMemcpyDeviceToDevice, s.stream);
    return e == cudaSuccess ? gptoss_status_success : fail(e, "buffer_copy");
  });
}

// Device to device over NVLink or PCIe (cudaMemcpyPeerAsync); a step that copies between
// devices runs eagerly (no graph).
gptoss_status buffer_copy_peer(Stm src_stream, Buf src, size_t src_offset, Dev dst_dev, Buf dst,
                               size_t dst_offset, size_t bytes) {
  if (src_stream == nullptr || src == nullptr || dst_dev == nullptr || dst == nullptr)
    return fail(gptoss_status_invalid_argument, "buffer_copy_peer: null argument");
  Stream& s = stream_of(src_stream);
  const int dst_ordinal = device_of(dst_dev).ordinal;
  OpSignature not_replayable;
  not_replayable.overflow = true;
  return s.graph.op(not_replayable, [&s, src, src_offset, dst_ordinal, dst, dst_offset, bytes] {
    if (gptoss_status st = s.dev->activate(); st != gptoss_status_success) return st;
    const cudaError_t e = cudaMemcpyPeerAsync(ptr<char>(dst) + dst_offset, dst_ordinal,
                                              ptr<char>(src) + src_offset, s.dev->ordinal, bytes, s.stream);
    return e == cudaSuccess ? gptoss_status_success : fail(e, "buffer_copy_peer");
  });
}

}  // namespace slots
}  // namespace gptoss::cuda
