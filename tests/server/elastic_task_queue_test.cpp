// The HTTP server's connection threads: work that would wait for a busy thread gets a new one
// (up to the maximum), extra threads end when idle, shutdown runs what is queued.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "http/elastic_task_queue.hpp"

using namespace gptoss_server;
using namespace std::chrono_literals;

namespace {

// Waits up to 5 s for `pred`.
template <typename Pred>
bool eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

}  // namespace

TEST_CASE("elastic task queue: blocked tasks do not delay new ones; extra threads end when idle",
          "[server][concurrency]") {
  ElasticTaskQueue queue(4, 256, 200ms);
  CHECK(queue.threads() == 4);
  // 100 tasks that hold their thread (idle keep-alive connections) ...
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> holding{0};
  for (int i = 0; i < 100; ++i)
    queue.enqueue([&, released] {
      ++holding;
      released.wait();
    });
  REQUIRE(eventually([&] { return holding.load() == 100; }));
  CHECK(queue.threads() >= 100);
  // ... and a new one runs at once, not after them.
  std::promise<void> ran;
  auto ran_future = ran.get_future();
  queue.enqueue([&] { ran.set_value(); });
  CHECK(ran_future.wait_for(2s) == std::future_status::ready);
  release.set_value();
  // Back to the minimum once idle.
  CHECK(eventually([&] { return queue.threads() == 4; }));
  CHECK(queue.peak_threads() >= 101);
  queue.enqueue([] {});  // joins the ended threads
  CHECK(queue.threads() == 4);
}

TEST_CASE(
    "elastic task queue: at the maximum, work waits for a thread; shutdown runs what is queued",
    "[server][concurrency]") {
  auto queue = std::make_unique<ElasticTaskQueue>(1, 2, 10s);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> done{0};
  for (int i = 0; i < 2; ++i)
    queue->enqueue([&, released] {
      released.wait();
      ++done;
    });
  for (int i = 0; i < 10; ++i) queue->enqueue([&] { ++done; });
  std::this_thread::sleep_for(50ms);
  CHECK(done.load() == 0);  // both threads are held: the rest waits
  CHECK(queue->threads() == 2);
  release.set_value();
  queue->shutdown();
  CHECK(done.load() == 12);
  queue.reset();
}
