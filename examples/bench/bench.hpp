#pragma once
// Pieces of gptoss-bench.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <gptoss.hpp>

namespace gptoss::bench {

struct Options {
  std::string model;
  std::string tokenizer_json;
  size_t n_prompt = 512, n_gen = 128, reps = 5;
  unsigned threads = 0;  // 0 = all cores
  bool json = false;
  bool kernels = false;
  bool read_bw = false;     // --read-bw: the read test alone
  bool read_probe = false;  // --read-probe: decode against pure loads of its bytes
  bool constrained = false;  // --constrained: mask time per token beside decode time
  bool speculative = false;  // --speculative: verify cost and the oracle drafter's ceiling
  size_t draft_max = 16;     // --draft-max K: tokens the oracle drafts per step
  bool logit_rows = false;   // --logit-rows: --speculative also times a plain forward of k
  bool prompt_lookup = false;  // --prompt-lookup: prompt lookup on a restated file, free text
  bool exact = false;  // --precision exact
  bool use_mmap = true;
  bool kv_bf16 = false;  // --kv bf16
  size_t batch = 1;      // -b N: also decode N sequences together
  std::string backend;   // --backend NAME; empty: the library's default ("auto")
  double peak_gbps = 0;  // --peak-gbps G: decode against this bandwidth, no host read test
};

struct Stat {
  double mean = 0, std = 0;
};
Stat stat_of(const std::vector<double>& v);

// `threads`, or every core for 0 (the options' convention).
inline unsigned threads_or_all(unsigned threads) {
  return threads ? threads : std::max(1u, std::thread::hardware_concurrency());
}

// Read bandwidth in GB/s: `threads` threads summing a buffer of `bytes`, best of a few runs.
// Bytes of the read test: far larger than any cache (see membw.cpp).
constexpr size_t kReadTestBytes = size_t(1) << 30;
double measure_read_bandwidth(unsigned threads, size_t bytes = kReadTestBytes);
// The same test over a buffer made once, for measuring again and again (beside each of many
// benchmark rows) without touching a fresh 1 GiB each time.
class ReadTest {
 public:
  explicit ReadTest(unsigned threads, size_t bytes = kReadTestBytes);
  ~ReadTest();
  ReadTest(const ReadTest&) = delete;
  ReadTest& operator=(const ReadTest&) = delete;
  bool ok() const { return buf_ != nullptr; }
  double gbs() const;  // 0 where the buffer could not be made

 private:
  unsigned threads_;
  size_t words_;
  uint64_t* buf_;
};

// Sums the first words / streams / 8 * 8 * streams words of p, read as `streams` streams a
// part apart, each prefetched `ahead` words ahead (8 independent chains: vectorised adds at -O3).
uint64_t read_words(const uint64_t* p, size_t words, size_t streams, size_t ahead);
// An anonymous buffer of `bytes` in huge pages, word i = i * 0x9e3779b97f4a7c15 (every page
// written); nullptr if mmap fails.
uint64_t* touched_buffer(size_t bytes);

// Passes of pure loads in the read test's best pattern (4 streams per thread, 8 KiB ahead;
// each thread through its parts without waiting for the others) over a model's own files, as
// the page cache holds them (mapped a second time, read-only, 2 MiB-aligned for huge pages as
// the loader maps them), or over an anonymous buffer. --read-probe (read_probe.cpp) times them
// between decode tokens, since the memory a model lives in can read slower than a buffer of
// 1 GiB read over and over.
// Over files, it reads only the 2 MiB pieces the page cache holds whole (it must not read the
// disk; what the cache lacks the model has not read either) and is !ok() where it holds none;
// the constructor maps them and reads them once, untimed.
class ReadPasses {
 public:
  // `model`: a checkpoint directory (its *.safetensors and *.gguf files, in name order) or one
  // file.
  ReadPasses(const std::string& model, unsigned threads);
  // An anonymous buffer of `bytes` in huge pages, every page written.
  ReadPasses(size_t anonymous_bytes, unsigned threads);
  ~ReadPasses();
  ReadPasses(const ReadPasses&) = delete;
  ReadPasses& operator=(const ReadPasses&) = delete;
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  size_t bytes() const;                              // what passes read from
  size_t skipped_bytes() const { return skipped_; }  // of the files, not in the page cache
  // Seconds to read `bytes` from where the last pass stopped, on through the regions and round
  // again after the last; every thread reads its part of each region's stretch (rounded down
  // to 4 streams of whole lines).
  double pass(size_t bytes);
  // The next pass starts at the beginning again.
  void rewind() { region_ = pos_ = 0; }
  // The sum of the 64-bit words the last pass read (keeps the loads alive; tests check it).
  uint64_t last_sum() const { return last_sum_; }

  struct File {
    std::string path;
    const uint8_t* data;  // mapped, read-only
    size_t size;
  };
  const std::vector<File>& files() const { return files_; }
  // Whether [p, p + n) lies in one of the mapped files and the page cache holds all of it.
  bool cached(const uint8_t* p, size_t n) const;

 private:
  struct Region {
    const uint64_t* words;
    size_t n_words;
  };
  unsigned threads_;
  std::vector<File> files_;      // mapped here, released by the destructor
  bool anonymous_ = false;        // regions_[0] is an anonymous buffer to release
  std::vector<Region> regions_;  // what passes read, in order
  size_t skipped_ = 0;
  std::string error_;
  size_t region_ = 0, pos_ = 0;  // where the next pass starts
  uint64_t last_sum_ = 0;
};

// Pure loads of what one decode token reads, from the checkpoint's files that `files` mapped
// (safetensors, or GGUF through the library's reader): every tensor of the layers and the
// unembedding whole, and of each layer's expert tensors (experts outermost) the slices of
// `experts_per_token` experts drawn at random per pass and layer; not the embedding table (one
// row). Each pass reads the tensors in file order, every thread its part of each (the read
// test's best pattern). A GGUF's experts are converted at load, so its replay reads the same
// bytes per tensor as the decode but from the file's page cache, not from the memory the
// kernels read. !ok() for a file neither reader takes, or where the page cache does not hold a
// tensor whole.
class TokenReplay {
 public:
  TokenReplay(const ReadPasses& files, unsigned experts_per_token, unsigned threads);
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  size_t bytes_per_pass() const { return bytes_; }
  double pass();  // seconds
  uint64_t last_sum() const { return last_sum_; }

 private:
  struct Tensor {
    const uint8_t* data;
    size_t size;
    size_t experts;  // > 0: an expert tensor of that many experts
    size_t layer;
  };
  std::vector<Tensor> tensors_;
  unsigned k_, threads_;
  size_t bytes_ = 0;
  uint64_t rng_ = 0x2545f4914f6cdd1dull;
  std::string error_;
  uint64_t last_sum_ = 0;
};

int run_read_probe(const Options& o);
// --constrained (constrained_bench.cpp): allowed-token mask time per token under a Harmony
// grammar and a nested JSON Schema, beside the decode time per token.
int run_constrained_bench(const Options& o);
// --speculative (speculative_bench.cpp).
int run_speculative_bench(const Options& o);
// --prompt-lookup (lookup_bench.cpp).
int run_lookup_bench(const Options& o);

// Peak resident set size of this process in bytes (VmHWM).
size_t peak_rss_bytes();
// Restarts the kernel's peak-RSS count (VmHWM) at the current RSS, so that the bandwidth
// test's buffer is not counted as the model's; false where the kernel does not support it.
bool reset_peak_rss();

// The model options the command line asks for (threads, mmap, precision, tokenizer).
gptoss_model_options model_options(const Options& o);

// The decode benchmarks' common setup (model_bench.cpp, speculative_bench.cpp): one greedy
// sequence after a fixed prompt, so that their figures compare.
// A context of `context_length` tokens, steps of at most `max_batch_tokens`, KV in --kv's dtype.
gptoss_context_options decode_context_options(const Options& o, size_t context_length,
                                              size_t max_batch_tokens);
gptoss::sampler greedy_sampler();
// Ordinary text token ids are 1000 .. 1000 + text_id_range(vocab) - 1 (below the special tokens).
inline size_t text_id_range(size_t vocab_size) {
  return std::min<size_t>(vocab_size, 199000) - 1000;
}
// A fixed pseudo-random prompt of `n` ordinary text tokens.
std::vector<uint32_t> bench_prompt(size_t n, size_t vocab_size);

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The benchmarks throw gptoss::error (include/gptoss.hpp) when a library call fails; main()
// prints it and exits 1.
int run_model_bench(const Options& o);
int run_kernel_bench(const Options& o);

}  // namespace gptoss::bench
