// The CPU backend's thread pool used from several threads at once, as a model shared by
// several host threads uses it: jobs of every size (spinning and sleeping workers), callers
// racing for the pool, pools created and destroyed while their workers spin. Tagged
// [concurrency]: the ThreadSanitizer build runs these (docs/reliability.md).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "thread_pool.hpp"

using gptoss::cpu::ThreadPool;

namespace {

// Runs parallel_for(n); true if every index was visited exactly once, by the thread whose
// contiguous chunk holds it, with the job's plain writes visible afterwards. (No Catch2
// assertions off the main thread: Catch2 v2 is not thread safe.)
bool parallel_for_ok(ThreadPool& pool, size_t n) {
  std::vector<int> hits(n, 0);  // plain ints: the pool must order the workers' writes
  std::vector<unsigned> owner(n, ~0u);
  std::atomic<bool> bad_range{false};
  pool.parallel_for(n, [&](size_t begin, size_t end, unsigned thread) {
    if (begin >= end || end > n || thread >= pool.size()) bad_range = true;
    for (size_t i = begin; i < end && i < n; ++i) {
      ++hits[i];
      owner[i] = thread;
    }
  });
  const size_t parts = n < 2 ? 1 : pool.size();  // fewer than 2 items run on the caller
  for (size_t i = 0; i < n; ++i)
    if (hits[i] != 1 || owner[i] >= parts || n * owner[i] / parts > i || i >= n * (owner[i] + 1) / parts)
      return false;
  return !bad_range;
}

bool run_on_all_ok(ThreadPool& pool) {
  std::vector<int> ran(pool.size(), 0);
  pool.run_on_all([&](unsigned t) { ++ran[t]; });
  for (int r : ran)
    if (r != 1) return false;
  return true;
}

}  // namespace

TEST_CASE("thread pool: callers on several threads share one pool", "[concurrency][cpu-ops]") {
  for (unsigned threads : {2u, 3u}) {
    ThreadPool pool(threads);
    std::atomic<int> failures{0};
    std::vector<std::thread> callers;
    for (unsigned c = 0; c < 3; ++c)
      callers.emplace_back([&, c] {
        for (size_t round = 0; round < 60; ++round) {
          if (!parallel_for_ok(pool, 1 + (round * 7 + c) % 97)) ++failures;
          if (!run_on_all_ok(pool)) ++failures;
          // Now and then long enough for the workers to stop spinning and sleep.
          if (round % 20 == 19) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      });
    for (auto& t : callers) t.join();
    CHECK(failures == 0);
  }
}

TEST_CASE("thread pool: a slow part is finished before parallel_for returns",
          "[concurrency][cpu-ops]") {
  ThreadPool pool(3);
  for (int round = 0; round < 20; ++round) {
    std::vector<long> out(3, 0);
    pool.parallel_for(3, [&](size_t begin, size_t end, unsigned) {
      if (begin == 2) std::this_thread::sleep_for(std::chrono::microseconds(300));
      for (size_t i = begin; i < end; ++i) out[i] = long(i) + 1;
    });
    CHECK(out == std::vector<long>{1, 2, 3});
  }
}

TEST_CASE("thread pool: created and destroyed while its workers spin or sleep",
          "[concurrency][cpu-ops]") {
  for (unsigned i = 0; i < 20; ++i) {
    ThreadPool pool(1 + i % 4);
    if (i % 2 == 0) CHECK(parallel_for_ok(pool, 64));  // workers spin as it is destroyed
    if (i % 5 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}
