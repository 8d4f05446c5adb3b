#pragma once
// The HTTP server's connection threads. cpp-httplib 0.11 serves a connection on one thread
// from its accept until it closes, and an idle keep-alive connection (or one that has sent
// nothing yet) holds its thread until --keep-alive-timeout; with a fixed pool, a few hundred
// idle connections queue every other client behind them for that long. This pool keeps
// `min_threads` and starts another thread whenever a connection would otherwise wait, up to
// `max_threads`; threads beyond the minimum end after `idle` without work. A thread that cannot
// be started (an address-space limit) leaves the connection queued, never fails it.
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

namespace gptoss_server {

class ElasticTaskQueue : public httplib::TaskQueue {
 public:
  ElasticTaskQueue(size_t min_threads, size_t max_threads, std::chrono::milliseconds idle);
  ~ElasticTaskQueue() override;

  void enqueue(std::function<void()> fn) override;
  // Runs what is queued, then joins every thread.
  void shutdown() override;

  size_t threads() const;
  size_t peak_threads() const;

 private:
  void work();
  // Under the lock: starts a thread; false if the system refused one.
  bool start_thread();
  // Under the lock: joins threads that ended for idleness.
  void reap();

  const size_t min_threads_, max_threads_;
  const std::chrono::milliseconds idle_timeout_;
  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::deque<std::function<void()>> jobs_;
  std::list<std::thread> threads_;
  std::vector<std::thread::id> ended_;
  size_t live_ = 0;  // threads started and not ended
  size_t idle_ = 0;  // threads waiting for work
  size_t peak_ = 0;
  bool shutdown_ = false;
};

}  // namespace gptoss_server
