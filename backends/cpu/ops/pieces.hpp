#pragma once
// How the fast ops cut their work over the thread pool.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "cpu_backend.hpp"

namespace gptoss::cpu::ops {

inline Device& device_of(Stream* stream) { return *stream->dev; }

// Rows per piece when splitting `rows` weight rows over the pool: at least `min_grain` (a
// multiple of it), and for memory-bound calls (few tokens) about 16 pieces per thread: every
// piece starts a new stream the hardware prefetcher must pick up again, at memory latency.
inline size_t rows_per_piece(size_t rows, size_t n_tokens, const ThreadPool& pool, size_t min_grain,
                             size_t per_thread = 16) {
  if (n_tokens > 4) return min_grain;
  const size_t want = rows / (per_thread * size_t(pool.size()));
  return std::max(min_grain, want / min_grain * min_grain);
}

// Runs f(begin, end) over [0, n) in pieces of `grain`. Every output must be computed by one
// piece, so results do not depend on which thread ran it.
//
// Each pool thread starts on its own contiguous share of the pieces and walks it in order:
// a GEMV's weight stream then runs on from one piece into the next (the software prefetch
// ahead of a piece's last rows has already fetched the next piece's first). A thread done
// with its share takes pieces from the back of the others' (the machine is shared: a purely
// static split would wait for the slowest core).
//
// merge: the owner takes half of what is left of its share in one call (f over several
// pieces), then half of the rest, and so on: long calls while there is work (the decode
// GEMVs read 4 streams a quarter of the call's rows apart), single pieces at the end so the
// threads finish together. Only for f whose results do not depend on how [0, n) is cut
// (the decode GEMV kernels: tested).
//
// `work` (multiply-adds, roughly) below kMinParallelWork runs on the calling thread alone: waking
// a worker and waiting for it costs microseconds, more than such an op (tiny models, router).
constexpr double kMinParallelWork = 1 << 18;

// A thread's share of the pieces, [begin, end) packed in one word so that the owner taking
// the front and a thief taking the back cannot both get the last piece.
struct alignas(64) PieceShare {
  std::atomic<uint64_t> range{0};
  void set(size_t begin, size_t end) { range.store(uint64_t(begin) << 32 | uint64_t(end), std::memory_order_relaxed); }
  // Takes pieces [first, first + count): from the front, half of what is left (at least
  // one, at most max_front), or one from the back.
  bool take(bool front, size_t max_front, size_t& first, size_t& count) {
    uint64_t cur = range.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t b = cur >> 32, e = cur & 0xffffffffu;
      if (b >= e) return false;
      const uint64_t c = front ? std::clamp<uint64_t>((e - b) / 2, 1, max_front) : 1;
      const uint64_t next = front ? (b + c) << 32 | e : b << 32 | (e - 1);
      if (range.compare_exchange_weak(cur, next, std::memory_order_relaxed)) {
        first = size_t(front ? b : e - 1);
        count = size_t(c);
        return true;
      }
    }
  }
};

template <typename Fn>
void for_each_piece(ThreadPool& pool, size_t n, size_t grain, double work, Fn&& f,
                    bool merge = false) {
  if (n == 0) return;
  grain = std::max<size_t>(1, grain);
  if (n <= grain || pool.size() == 1 || work < kMinParallelWork) {
    f(size_t(0), n);
    return;
  }
  const size_t pieces = (n + grain - 1) / grain, T = pool.size();
  std::unique_ptr<PieceShare[]> shares(new PieceShare[T]);
  for (size_t t = 0; t < T; ++t) shares[t].set(pieces * t / T, pieces * (t + 1) / T);
  const size_t max_front = merge ? pieces : 1;
  pool.run_on_all([&](unsigned self) {
    size_t p, c;
    for (size_t k = 0; k < T; ++k) {
      PieceShare& s = shares[(self + k) % T];
      while (s.take(k == 0, max_front, p, c)) f(p * grain, std::min(n, (p + c) * grain));
    }
  });
}

}  // namespace gptoss::cpu::ops
