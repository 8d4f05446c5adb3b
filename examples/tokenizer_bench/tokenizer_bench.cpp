// gptoss-tokenizer-bench --tokenizer-json PATH FILE [-r N]
// Encodes FILE N times on one thread through the C API and prints a markdown table: the first
// run is "cold" (empty piece cache), the rest "warm". Uses only include/gptoss.h.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

#include "gptoss.h"

namespace {

using Clock = std::chrono::steady_clock;

int usage() {
  std::fprintf(stderr, "usage: gptoss-tokenizer-bench --tokenizer-json PATH FILE [-r N]\n");
  return 2;
}

bool check(gptoss_status status, const char* what) {
  if (status == gptoss_status_success) return true;
  std::fprintf(stderr, "%s: %s: %s\n", what, gptoss_status_to_string(status),
               gptoss_get_last_error_message());
  return false;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string tokenizer_path, file_path;
  int runs = 10;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--tokenizer-json") == 0 && i + 1 < argc) {
      tokenizer_path = argv[++i];
    } else if (std::strcmp(argv[i], "-r") == 0 && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else if (argv[i][0] != '-' && file_path.empty()) {
      file_path = argv[i];
    } else {
      return usage();
    }
  }
  if (tokenizer_path.empty() || file_path.empty() || runs < 1) return usage();

  std::ifstream in(file_path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", file_path.c_str());
    return 1;
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  const auto load_start = Clock::now();
  gptoss_tokenizer_t tokenizer = nullptr;
  if (!check(gptoss_tokenizer_create_from_file(tokenizer_path.c_str(), &tokenizer), "load")) return 1;
  const double load_s = seconds_since(load_start);

  std::vector<uint32_t> tokens(text.size() + 16);
  std::vector<double> times;
  size_t n_tokens = 0;
  for (int r = 0; r < runs; ++r) {
    const auto start = Clock::now();
    if (!check(gptoss_tokenizer_encode(tokenizer, text.data(), text.size(), 0, tokens.data(),
                                       tokens.size(), &n_tokens),
               "encode")) {
      gptoss_tokenizer_release(tokenizer);
      return 1;
    }
    times.push_back(seconds_since(start));
  }
  gptoss_tokenizer_release(tokenizer);

  const double mb = static_cast<double>(text.size()) / 1e6;
  const double cold = times.front();
  std::printf("| file | bytes | tokens | load s | cold MB/s | warm best MB/s | warm mean MB/s | runs |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  std::printf("| %s | %zu | %zu | %.3f | %.2f |", file_path.c_str(), text.size(), n_tokens, load_s,
              mb / cold);
  if (times.size() > 1) {
    const double best = *std::min_element(times.begin() + 1, times.end());
    const double mean = std::accumulate(times.begin() + 1, times.end(), 0.0) /
                        static_cast<double>(times.size() - 1);
    std::printf(" %.2f | %.2f | %d |\n", mb / best, mb / mean, runs);
  } else {
    std::printf(" - | - | 1 |\n");
  }
  return 0;
}
