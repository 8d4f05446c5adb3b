#pragma once
// A persistent pool: parallel_for splits [0, n) into contiguous chunks, one per thread, and
// the calling thread takes part. Workers spin briefly on a generation counter after each job
// (ops of one forward step follow each other within microseconds), then sleep on a condition
// variable, so an idle model costs no CPU. No thread is created per op. Calls from several
// threads are serialised (one op at a time owns the cores).
//
// A job has one part per thread. Each worker claims its part when it wakes; after its own
// part the caller claims and runs every part no worker has claimed yet, and waits only for
// parts workers actually took. On a loaded machine (more runnable threads than cores) a
// descheduled worker therefore never stalls an op: the caller does its share instead.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace gptoss::cpu {

class ThreadPool {
 public:
  using Fn = std::function<void(size_t, size_t, unsigned)>;
  explicit ThreadPool(unsigned num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return unsigned(workers_.size()) + 1; }
  // fn(begin, end, thread_index) over disjoint ranges covering [0, n); thread i gets the i-th
  // contiguous chunk, so which thread computes what does not depend on timing.
  void parallel_for(size_t n, const Fn& fn);
  // fn(thread_index) once on every thread of the pool (for dynamically scheduled work).
  void run_on_all(const std::function<void(unsigned)>& fn);

 private:
  void worker_loop(unsigned index);
  void dispatch(const Fn& fn, size_t n);
  bool claim(unsigned part, uint64_t gen);

  std::vector<std::thread> workers_;
  std::mutex call_mutex_;  // one parallel_for at a time
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  const Fn* job_ = nullptr;
  size_t job_n_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::unique_ptr<std::atomic<uint64_t>[]> claimed_;  // per part: last generation claimed
  std::atomic<unsigned> done_{0};                      // parts finished by workers
  std::atomic<bool> stop_{false};
};

}  // namespace gptoss::cpu
