// A multi-threaded memory read test (the ceiling decode speed is compared against) and peak
// RSS.
#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench.hpp"

namespace gptoss::bench {

Stat stat_of(const std::vector<double>& v) {
  Stat s;
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= double(v.size());
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.std = std::sqrt(ss / double(v.size() - 1));
  }
  return s;
}

uint64_t read_words(const uint64_t* p, size_t words, size_t streams, size_t ahead) {
  const size_t m = words / streams / 8 * 8;
  uint64_t a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < m; i += 8)
    for (size_t s = 0; s < streams; ++s) {
      const uint64_t* q = p + s * m + i;
      __builtin_prefetch(q + ahead);
      for (int j = 0; j < 8; ++j) a[j] += q[j];
    }
  uint64_t sum = 0;
  for (int j = 0; j < 8; ++j) sum += a[j];
  return sum;
}

uint64_t* touched_buffer(size_t bytes) {
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return nullptr;
  (void)madvise(mem, bytes, MADV_HUGEPAGE);
  uint64_t* buf = static_cast<uint64_t*>(mem);
  for (size_t i = 0; i < bytes / sizeof(uint64_t); ++i) buf[i] = i * 0x9e3779b97f4a7c15ull;
  return buf;
}

ReadTest::ReadTest(unsigned threads, size_t bytes)
    : threads_(threads_or_all(threads)), words_(bytes / sizeof(uint64_t)),
      buf_(touched_buffer(words_ * sizeof(uint64_t))) {}

ReadTest::~ReadTest() {
  if (buf_ != nullptr) munmap(buf_, words_ * sizeof(uint64_t));
}

double ReadTest::gbs() const {
  // The ceiling is measured the ways the decode kernels read weights, and the best counts, so
  // the percentage is not flattered by a handicapped baseline: huge pages, and each thread
  // reading one stream with software prefetch 8 KiB ahead (the MXFP4 GEMVs), or 4 streams a
  // quarter of its range apart with prefetch 8 KiB or 1 KiB ahead (the bf16 GEMVs;
  // row_streams.hpp). The buffer must dwarf every cache, as the ~3.7 GB a decode token streams
  // do: a smaller one partly stays cached and reads faster (docs/performance.md,
  // "Smaller measurements behind code choices").
  if (buf_ == nullptr) return 0.0;
  const size_t n = words_;
  double best = 0;
  for (int run = 0; run < 6; ++run) {
    const size_t streams = run % 3 == 0 ? 1 : 4;
    const size_t ahead = run % 3 == 2 ? 128 : 1024;  // words: 1 KiB or 8 KiB
    std::vector<uint64_t> sums(threads_);
    std::vector<std::thread> pool;
    const auto t0 = std::chrono::steady_clock::now();
    for (unsigned t = 0; t < threads_; ++t)
      pool.emplace_back([&, t] {
        const size_t words = n * (t + 1) / threads_ - n * t / threads_;
        sums[t] = read_words(buf_ + n * t / threads_, words, streams, ahead);
      });
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    uint64_t check = 0;
    for (uint64_t x : sums) check += x;
    if (check == 42) std::fprintf(stderr, " ");  // keeps the sums alive
    size_t read = 0;  // what the runs actually covered (each part rounded down to whole streams)
    for (unsigned t = 0; t < threads_; ++t)
      read += (n * (t + 1) / threads_ - n * t / threads_) / streams / 8 * 8 * streams;
    best = std::max(best, double(read * sizeof(uint64_t)) / s / 1e9);
  }
  return best;
}

double measure_read_bandwidth(unsigned threads, size_t bytes) {
  return ReadTest(threads, bytes).gbs();
}

bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  return bool(f.flush());
}

size_t peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return size_t(std::stoull(line.substr(6))) * 1024;
  rusage ru;
  std::memset(&ru, 0, sizeof ru);
  getrusage(RUSAGE_SELF, &ru);
  return size_t(ru.ru_maxrss) * 1024;
}

}  // namespace gptoss::bench
