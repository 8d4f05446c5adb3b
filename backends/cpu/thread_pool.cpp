#include "thread_pool.hpp"

namespace gptoss::cpu {

ThreadPool::ThreadPool(unsigned num_threads) {
  if (num_threads == 0) num_threads = 1;
  for (unsigned i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

static void run_chunk(const std::function<void(size_t, size_t, unsigned)>& fn, size_t n,
                      unsigned index, unsigned parts) {
  const size_t begin = n * index / parts, end = n * (index + 1) / parts;
  if (begin < end) fn(begin, end, index);
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, size_t, unsigned)>& fn) {
  std::lock_guard<std::mutex> call(call_mutex_);
  if (workers_.empty() || n < 2) {
    if (n > 0) fn(0, n, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    pending_ = unsigned(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  run_chunk(fn, n, 0, size());
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker_loop(unsigned index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(size_t, size_t, unsigned)>* job;
    size_t n;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
    }
    run_chunk(*job, n, index, size());
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

}  // namespace gptoss::cpu
