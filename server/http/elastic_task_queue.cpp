#include "http/elastic_task_queue.hpp"

#include <algorithm>
#include <system_error>

namespace gptoss_server {

ElasticTaskQueue::ElasticTaskQueue(size_t min_threads, size_t max_threads,
                                   std::chrono::milliseconds idle)
    : min_threads_(std::max<size_t>(1, min_threads)),
      max_threads_(std::max(max_threads, std::max<size_t>(1, min_threads))), idle_timeout_(idle) {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < min_threads_; ++i)
    if (!start_thread() && live_ == 0) throw std::runtime_error("cannot start an HTTP thread");
}

ElasticTaskQueue::~ElasticTaskQueue() {
  bool running;
  {
    std::lock_guard lock(mutex_);
    running = !shutdown_;
  }
  if (running) shutdown();
}

bool ElasticTaskQueue::start_thread() {
  try {
    threads_.emplace_back([this] { work(); });
  } catch (const std::system_error&) {
    return false;
  }
  ++live_;
  peak_ = std::max(peak_, live_);
  return true;
}

void ElasticTaskQueue::reap() {
  for (auto id : ended_) {
    auto it = std::find_if(threads_.begin(), threads_.end(),
                           [&](const std::thread& t) { return t.get_id() == id; });
    if (it != threads_.end()) {
      it->join();  // it has ended its loop: returns at once
      threads_.erase(it);
    }
  }
  ended_.clear();
}

void ElasticTaskQueue::enqueue(std::function<void()> fn) {
  {
    std::lock_guard lock(mutex_);
    reap();
    jobs_.push_back(std::move(fn));
    if (jobs_.size() > idle_ && live_ < max_threads_) start_thread();
  }
  work_ready_.notify_one();
}

void ElasticTaskQueue::shutdown() {
  std::list<std::thread> threads;
  {
    std::lock_guard lock(mutex_);
    shutdown_ = true;
  }
  work_ready_.notify_all();
  {
    std::lock_guard lock(mutex_);
    threads.swap(threads_);
    ended_.clear();
  }
  for (auto& t : threads) t.join();
}

void ElasticTaskQueue::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    ++idle_;
    const bool woke =
        work_ready_.wait_for(lock, idle_timeout_, [&] { return shutdown_ || !jobs_.empty(); });
    --idle_;
    if (jobs_.empty()) {
      if (shutdown_) break;
      if (!woke && live_ > min_threads_) {
        ended_.push_back(std::this_thread::get_id());
        break;
      }
      continue;
    }
    auto fn = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    fn();
    lock.lock();
  }
  --live_;
}

size_t ElasticTaskQueue::threads() const {
  std::lock_guard lock(mutex_);
  return live_;
}

size_t ElasticTaskQueue::peak_threads() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

}  // namespace gptoss_server
