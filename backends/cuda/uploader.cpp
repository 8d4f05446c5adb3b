#include "uploader.hpp"

#include <cstring>

#include "cuda_backend.hpp"

namespace gptoss::cuda {

Uploader::~Uploader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void Uploader::enqueue(void* dst, const void* host, size_t bytes, std::shared_ptr<const void> owned,
                       std::string name) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!worker_.joinable()) worker_ = std::thread([this] { run(); });
  jobs_.push_back({dst, host, bytes, std::move(owned), std::move(name)});
  cv_.notify_all();
}

gptoss_status Uploader::wait(std::string* error) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return jobs_.empty() && !busy_; });
  const cudaError_t e = error_;
  const std::string name = error_name_;
  error_ = cudaSuccess;
  error_name_.clear();
  lock.unlock();
  if (e == cudaSuccess) return gptoss_status_success;
  const gptoss_status st = fail(e, name + ": upload");
  if (error != nullptr) *error = error_text();
  return st;
}

void Uploader::run() {
  cudaError_t setup = cudaSetDevice(ordinal_);
  if (setup == cudaSuccess) setup = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
  for (int i = 0; i < 2 && setup == cudaSuccess; ++i) {
    setup = cudaHostAlloc(&stage_[i], kStage, cudaHostAllocDefault);
    if (setup == cudaSuccess) setup = cudaEventCreateWithFlags(&done_[i], cudaEventDisableTiming);
  }
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) break;  // stop_
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    const bool skip = error_ != cudaSuccess;  // after a failure, the load is failing anyway
    lock.unlock();
    cudaError_t e = setup;
    if (e == cudaSuccess && !skip) e = copy(job);
    job.owned.reset();  // copied into staging memory: no longer needed
    lock.lock();
    if (jobs_.empty() && e == cudaSuccess && setup == cudaSuccess) {  // the completion point
      lock.unlock();
      e = cudaStreamSynchronize(stream_);
      lock.lock();
    }
    if (e != cudaSuccess && error_ == cudaSuccess && !skip) {
      error_ = e;
      error_name_ = job.name;
    }
    busy_ = false;
    cv_.notify_all();
  }
  lock.unlock();
  for (int i = 0; i < 2; ++i) {
    if (done_[i] != nullptr) cudaEventDestroy(done_[i]);
    if (stage_[i] != nullptr) cudaFreeHost(stage_[i]);
  }
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

// Chunks alternate between the two staging buffers: a buffer is refilled once the DMA that
// read it last has completed, while the other one's DMA runs.
cudaError_t Uploader::copy(const Job& job) {
  const auto* src = static_cast<const char*>(job.host);
  auto* dst = static_cast<char*>(job.dst);
  for (size_t done = 0; done < job.bytes;) {
    const size_t n = std::min(kStage, job.bytes - done);
    const int b = next_;
    next_ ^= 1;
    if (cudaError_t e = cudaEventSynchronize(done_[b]); e != cudaSuccess) return e;
    std::memcpy(stage_[b], src + done, n);
    if (cudaError_t e = cudaMemcpyAsync(dst + done, stage_[b], n, cudaMemcpyHostToDevice, stream_);
        e != cudaSuccess)
      return e;
    if (cudaError_t e = cudaEventRecord(done_[b], stream_); e != cudaSuccess) return e;
    done += n;
  }
  return cudaSuccess;
}

}  // namespace gptoss::cuda
