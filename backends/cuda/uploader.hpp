#pragma once
// Weight uploads through pinned staging memory on a thread of their own.
//
// cudaMemcpy from pageable memory (the checkpoint's memory map) goes through the driver's
// own small staging buffer, one chunk at a time, and stalls on every page fault of the map.
// Here a worker thread copies each tensor into one of two pinned 64 MiB buffers while the
// other one's DMA runs, so that reading the file (page faults), the host copy and the PCIe
// transfer overlap; the loading thread only queues jobs. wait() is the completion point.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gptoss/backend.h"
#include "gpu_runtime.hpp"

namespace gptoss::cuda {

class Uploader {
 public:
  explicit Uploader(int device_ordinal) : ordinal_(device_ordinal) {}
  ~Uploader();
  Uploader(const Uploader&) = delete;
  Uploader& operator=(const Uploader&) = delete;

  // Queues bytes from `host` to device memory `dst`. `owned` (may be null) keeps the host
  // bytes alive until they are copied (converted tensors); without it `host` must stay valid
  // until wait() returns. `name` names the tensor in an error.
  void enqueue(void* dst, const void* host, size_t bytes, std::shared_ptr<const void> owned,
               std::string name);
  // Waits for every queued copy; the first failure (with its message) since the last wait.
  gptoss_status wait(std::string* error);

 private:
  struct Job {
    void* dst;
    const void* host;
    size_t bytes;
    std::shared_ptr<const void> owned;
    std::string name;
  };
  void run();
  cudaError_t copy(const Job& job);

  static constexpr size_t kStage = size_t(64) << 20;
  int ordinal_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool busy_ = false, stop_ = false;
  std::thread worker_;
  // Failure of a copy: kept until wait() reports it.
  cudaError_t error_ = cudaSuccess;
  std::string error_name_;
  // Worker-thread state.
  cudaStream_t stream_ = nullptr;
  void* stage_[2] = {nullptr, nullptr};
  cudaEvent_t done_[2] = {nullptr, nullptr};
  int next_ = 0;  // the staging buffer the next chunk goes to
};

}  // namespace gptoss::cuda
