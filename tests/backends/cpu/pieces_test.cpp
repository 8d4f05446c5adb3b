// for_each_piece (ops_util.hpp): every index of [0, n) runs exactly once, in pieces that
// start at multiples of the grain (or in one call on one thread; merged calls span several
// pieces), whatever the pool size, and however unevenly the threads
// progress (a slow thread's share is taken from the back by the others).
#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "pieces.hpp"

namespace gptoss::cpu::test {

TEST_CASE("pieces: every index runs once, shares are stolen from slow threads", "[cpu-ops]") {
  for (unsigned threads : {1u, 2u, 3u, 5u}) {
    ThreadPool pool(threads);
    for (bool merge : {false, true})
    for (size_t n : {1, 2, 7, 64, 1000, 4099})
      for (size_t grain : {1, 3, 32, 5000}) {
        std::unique_ptr<std::atomic<int>[]> hits(new std::atomic<int>[n]);
        for (size_t i = 0; i < n; ++i) hits[i] = 0;
        std::atomic<size_t> bad_piece{0}, caller_pieces{0}, done{0};
        const std::thread::id caller = std::this_thread::get_id();
        ops::for_each_piece(pool, n, grain, 1e9, [&](size_t b, size_t e) {
          // One thread (or one piece's worth) runs [0, n) in one call; otherwise pieces.
          const bool whole = threads == 1 || n <= grain;
          // Merged calls cover whole pieces: [b, e) starts and ends on the grain (or at n).
          const bool cut_ok = b % grain == 0 && e > b && e <= n && (e == n || e % grain == 0) &&
                              (merge || e - b <= grain);
          if (whole ? (b != 0 || e != n) : !cut_ok) ++bad_piece;
          // The calling thread stalls in its first piece until the others have run every other
          // index (a deadline keeps a broken pool from hanging the test): with stealing it
          // runs that one piece only, whatever the scheduler does.
          if (std::this_thread::get_id() == caller && threads > 1 && n > grain) {
            ++caller_pieces;
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (done.load() < n - (e - b) && std::chrono::steady_clock::now() < deadline)
              std::this_thread::sleep_for(std::chrono::microseconds(50));
          }
          for (size_t i = b; i < e; ++i) hits[i].fetch_add(1);
          done.fetch_add(e - b);
        }, merge);
        size_t wrong = 0;
        for (size_t i = 0; i < n; ++i) wrong += hits[i].load() != 1;
        INFO("threads " << threads << " n " << n << " grain " << grain << " merge " << merge);
        CHECK(bad_piece.load() == 0);
        CHECK(wrong == 0);
        // The stalled caller's own share went to the others.
        if (threads > 1 && n > grain) CHECK(caller_pieces.load() <= 1);
      }
  }
}

}  // namespace gptoss::cpu::test
