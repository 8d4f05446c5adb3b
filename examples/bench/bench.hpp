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
};

struct Stat {
  double mean = 0, std = 0;
};
Stat stat_of(const std::vector<double>& v);

// Read bandwidth in GB/s: `threads` threads summing a buffer of `bytes`, best of a few runs.
// Bytes of the read test: far larger than any cache (see membw.cpp).
constexpr size_t kReadTestBytes = size_t(1) << 30;
double measure_read_bandwidth(unsigned threads, size_t bytes = kReadTestBytes);

// Peak resident set size of this process in bytes (VmHWM).
size_t peak_rss_bytes();
// Restarts the kernel's peak-RSS count (VmHWM) at the current RSS, so that the bandwidth
// test's buffer is not counted as the model's; false where the kernel does not support it.
bool reset_peak_rss();

int run_model_bench(const Options& o);
int run_kernel_bench(const Options& o);

}  // namespace gptoss::bench
