#pragma once
// Small helpers shared by the fast ops.
#include <algorithm>
#include <atomic>
#include <cstddef>

#include "cpu_backend.hpp"

namespace gptoss::cpu::ops {

inline Device& device_of(void* stream) { return *static_cast<Stream*>(stream)->dev; }
inline const Weight& W(const void* w) { return *static_cast<const Weight*>(w); }
inline const float* F(const void* p) { return static_cast<const float*>(p); }
inline float* F(void* p) { return static_cast<float*>(p); }
inline const int32_t* I(const void* p) { return static_cast<const int32_t*>(p); }

// The int8 fast path applies to an MXFP4 weight on this device (see Device::quantize_activations).
inline bool use_q8(const Device& dev, const Weight& w) {
  return dev.quantize_activations && w.dtype == gptoss_dtype_mxfp4 &&
         dev.kernels->matmul_mxfp4_q8 != nullptr;
}

// Rows per piece when splitting `rows` weight rows over the pool: at least `min_grain` (a
// multiple of it), and for memory-bound calls (few tokens) about 16 pieces per thread: every
// piece starts a new stream the hardware prefetcher must pick up again, which costs ~1 us per
// piece at memory latency (tiny 32-row pieces cost 10% of a 20b decode token).
inline size_t rows_per_piece(size_t rows, size_t n_tokens, const ThreadPool& pool, size_t min_grain) {
  if (n_tokens > 4) return min_grain;
  const size_t want = rows / (16 * size_t(pool.size()));
  return std::max(min_grain, want / min_grain * min_grain);
}

// Runs f(begin, end) over [0, n) in pieces of `grain`, taken by whichever pool thread is free
// (the machine is shared: a static split waits for the slowest core). Every output must be
// computed by one piece, so results do not depend on which thread ran it.
//
// `work` (multiply-adds, roughly) below kMinParallelWork runs on the calling thread alone: waking
// a worker and waiting for it costs microseconds, more than such an op (tiny models, router).
constexpr double kMinParallelWork = 1 << 18;

template <typename Fn>
void for_each_piece(ThreadPool& pool, size_t n, size_t grain, double work, Fn&& f) {
  if (n == 0) return;
  grain = std::max<size_t>(1, grain);
  if (n <= grain || pool.size() == 1 || work < kMinParallelWork) {
    f(size_t(0), n);
    return;
  }
  std::atomic<size_t> next{0};
  pool.run_on_all([&](unsigned) {
    for (;;) {
      const size_t b = next.fetch_add(grain, std::memory_order_relaxed);
      if (b >= n) break;
      f(b, std::min(n, b + grain));
    }
  });
}

}  // namespace gptoss::cpu::ops
