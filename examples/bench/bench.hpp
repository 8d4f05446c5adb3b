#pragma once
// Pieces of gptoss-bench.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gptoss::bench {

struct Options {
  std::string model;
  std::string tokenizer_json;
  size_t n_prompt = 512, n_gen = 128, reps = 5;
  unsigned threads = 0;  // 0 = all cores
  bool json = false;
  bool kernels = false;
  bool exact = false;  // --precision exact
  bool use_mmap = true;
  bool kv_bf16 = false;  // --kv bf16
  size_t batch = 1;      // -b N: also decode N sequences together
  bool sustained_read = true;  // --sustained-read 0|1: pure loads of a decode's bytes after it
};

struct Stat {
  double mean = 0, std = 0;
};
Stat stat_of(const std::vector<double>& v);

// Read bandwidth in GB/s: `threads` threads summing a buffer of `bytes`, best of a few runs.
// Bytes of the read test: far larger than any cache (see membw.cpp).
constexpr size_t kReadTestBytes = size_t(1) << 30;
double measure_read_bandwidth(unsigned threads, size_t bytes = kReadTestBytes);

// The read rate sustained over as many bytes and passes as a decode: each pass reads a decode
// token's bytes, continuing through a ring far larger than any cache, in the read test's best
// pattern (4 streams per thread, 8 KiB ahead), each thread through its parts without waiting for
// the others. model_bench.cpp runs n_gen passes right after each repetition's decode: a second
// yardstick beside measure_read_bandwidth's best of short bursts, which a 60 ms decode token
// might not be able to match even with pure loads. Here it did: 128 passes of 3.7 GB read at
// the burst rate in calm minutes (75.4 vs 75.2 GB/s) and 5-10 % either side of it when the
// machine's bandwidth moved between the two (69.1 vs 72.8, 79.3 vs 76.8). A 1 GiB ring reads as
// a 4 GiB one here (72 vs 76 GB/s, alternating passes); a 256 MiB one is partly cached (82).
class SustainedReadTest {
 public:
  explicit SustainedReadTest(unsigned threads, size_t buffer_bytes = kReadTestBytes);
  ~SustainedReadTest();
  SustainedReadTest(const SustainedReadTest&) = delete;
  SustainedReadTest& operator=(const SustainedReadTest&) = delete;
  bool ok() const { return buf_ != nullptr; }
  size_t buffer_bytes() const { return words_ * sizeof(uint64_t); }
  // Seconds to read `bytes` (each thread's part of each stretch of the ring rounded down to
  // whole 64-byte lines per stream), starting where the last pass stopped.
  double pass(size_t bytes);
  // The sum of the 64-bit words the last pass read (they hold i * kRingWordFactor, i the
  // word's index in the ring): what keeps the loads alive, and what tests check.
  uint64_t last_sum() const { return last_sum_; }
  static constexpr uint64_t kRingWordFactor = 0x9e3779b97f4a7c15ull;

 private:
  unsigned threads_;
  size_t words_;
  uint64_t* buf_;
  size_t pos_ = 0;  // word where the next pass starts
  uint64_t last_sum_ = 0;
};

// Peak resident set size of this process in bytes (VmHWM).
size_t peak_rss_bytes();
// Restarts the kernel's peak-RSS count (VmHWM) at the current RSS, so that the bandwidth
// test's buffer is not counted as the model's; false where the kernel does not support it.
bool reset_peak_rss();

int run_model_bench(const Options& o);
int run_kernel_bench(const Options& o);

}  // namespace gptoss::bench
