#pragma once
// A persistent pool: parallel_for splits [0, n) into contiguous chunks, one per worker, and
// the calling thread takes part. Calls from several threads are serialised (one op at a
// time owns the cores).
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gptoss::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(unsigned num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return unsigned(workers_.size()) + 1; }
  // fn(begin, end, thread_index) over disjoint ranges covering [0, n).
  void parallel_for(size_t n, const std::function<void(size_t, size_t, unsigned)>& fn);

 private:
  void worker_loop(unsigned index);

  std::vector<std::thread> workers_;
  std::mutex call_mutex_;  // one parallel_for at a time
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(size_t, size_t, unsigned)>* job_ = nullptr;
  size_t job_n_ = 0;
  uint64_t generation_ = 0;
  unsigned pending_ = 0;
  bool stop_ = false;
};

}  // namespace gptoss::cpu
