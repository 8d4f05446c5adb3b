#include "thread_pool.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GPTOSS_CPU_RELAX() _mm_pause()
#else
#define GPTOSS_CPU_RELAX() std::this_thread::yield()
#endif

namespace gptoss::cpu {
namespace {
// About 100-300 microseconds of pause instructions: long enough to bridge the gap between two
// ops of a step, short enough that an idle model sleeps almost at once.
constexpr int kSpinIterations = 1 << 14;

void run_chunk(const ThreadPool::Fn& fn, size_t n, unsigned index, unsigned parts) {
  const size_t begin = n * index / parts, end = n * (index + 1) / parts;
  if (begin < end) fn(begin, end, index);
}
}  // namespace

ThreadPool::ThreadPool(unsigned num_threads) {
  if (num_threads == 0) num_threads = 1;
  claimed_.reset(new std::atomic<uint64_t>[num_threads]);
  for (unsigned i = 0; i < num_threads; ++i) claimed_[i].store(0);
  for (unsigned i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

bool ThreadPool::claim(unsigned part, uint64_t gen) {
  uint64_t cur = claimed_[part].load(std::memory_order_acquire);
  while (cur < gen)
    if (claimed_[part].compare_exchange_weak(cur, gen, std::memory_order_acq_rel)) return true;
  return false;
}

void ThreadPool::dispatch(const Fn& fn, size_t n) {
  job_ = &fn;
  job_n_ = n;
  done_.store(0, std::memory_order_relaxed);
  uint64_t gen;
  {
    // Under the lock so that a worker checking the generation before sleeping cannot miss it.
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    gen = generation_.fetch_add(1, std::memory_order_acq_rel) + 1;
  }
  wake_.notify_all();
  run_chunk(fn, n, 0, size());
  unsigned taken_by_workers = 0;
  for (unsigned part = 1; part < size(); ++part) {
    if (claim(part, gen))
      run_chunk(fn, n, part, size());
    else
      ++taken_by_workers;
  }
  for (int spin = 0; done_.load(std::memory_order_acquire) != taken_by_workers; ++spin) {
    if (spin < kSpinIterations)
      GPTOSS_CPU_RELAX();
    else
      std::this_thread::yield();
  }
  job_ = nullptr;
}

void ThreadPool::parallel_for(size_t n, const Fn& fn) {
  std::lock_guard<std::mutex> call(call_mutex_);
  if (workers_.empty() || n < 2) {
    if (n > 0) fn(0, n, 0);
    return;
  }
  dispatch(fn, n);
}

void ThreadPool::run_on_all(const std::function<void(unsigned)>& fn) {
  std::lock_guard<std::mutex> call(call_mutex_);
  const Fn each = [&fn](size_t, size_t, unsigned index) { fn(index); };
  if (workers_.empty()) {
    fn(0);
    return;
  }
  dispatch(each, size());
}

void ThreadPool::worker_loop(unsigned index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen && !stop_.load(std::memory_order_relaxed); ++spin) {
      if (spin < kSpinIterations) {
        GPTOSS_CPU_RELAX();
      } else {
        std::unique_lock<std::mutex> lock(sleep_mutex_);
        wake_.wait(lock, [&] {
          return stop_.load() || generation_.load(std::memory_order_acquire) != seen;
        });
      }
      gen = generation_.load(std::memory_order_acquire);
    }
    if (stop_.load()) return;
    seen = gen;
    // The job may already be finished (the caller claimed this part); then job_ is not read.
    if (!claim(index, gen)) continue;
    run_chunk(*job_, job_n_, index, size());
    done_.fetch_add(1, std::memory_order_acq_rel);
  }
}

}  // namespace gptoss::cpu
