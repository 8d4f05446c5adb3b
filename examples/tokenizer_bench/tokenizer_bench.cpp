// gptoss-tokenizer-bench --tokenizer-json PATH FILE [-r N]
// Encodes FILE N times on one thread through the C API and prints a markdown table: the first
// run is "cold" (empty piece cache), the rest "warm". Uses only include/gptoss.h.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
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

double cpu_seconds_since(std::clock_t start) {
  return static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
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
  const std::clock_t load_cpu_start = std::clock();
  gptoss_tokenizer_t tokenizer = nullptr;
  if (!check(gptoss_tokenizer_create_from_file(tokenizer_path.c_str(), &tokenizer), "load"))
    return 1;
  const double load_s = seconds_since(load_start);
  const double load_cpu_s = cpu_seconds_since(load_cpu_start);

  // Wall time is what a caller sees; CPU time is what the code costs on a busy machine.
  std::vector<uint32_t> tokens(text.size() + 16);
  std::vector<double> wall, cpu;
  size_t n_tokens = 0;
  for (int r = 0; r < runs; ++r) {
    const auto start = Clock::now();
    const std::clock_t cpu_start = std::clock();
    if (!check(gptoss_tokenizer_encode(tokenizer, text.data(), text.size(), 0, tokens.data(),
                                       tokens.size(), &n_tokens),
               "encode")) {
      gptoss_tokenizer_release(tokenizer);
      return 1;
    }
    wall.push_back(seconds_since(start));
    cpu.push_back(cpu_seconds_since(cpu_start));
  }
  gptoss_tokenizer_release(tokenizer);

  const double mb = static_cast<double>(text.size()) / 1e6;
  std::printf("%s: tokenizer load %.3f s wall, %.3f s CPU\n\n", file_path.c_str(), load_s,
              load_cpu_s);
  std::printf("| run | bytes | tokens | runs | best MB/s | mean MB/s | best MB/s per CPU-s |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  auto row = [&](const char* name, size_t first, size_t last) {
    if (first >= last) return;
    const double best = *std::min_element(wall.begin() + first, wall.begin() + last);
    const double mean = std::accumulate(wall.begin() + first, wall.begin() + last, 0.0) /
                        static_cast<double>(last - first);
    const double best_cpu = *std::min_element(cpu.begin() + first, cpu.begin() + last);
    std::printf("| %s | %zu | %zu | %zu | %.2f | %.2f | %.2f |\n", name, text.size(), n_tokens,
                last - first, mb / best, mb / mean, mb / std::max(best_cpu, 1e-9));
  };
  row("cold (first run, empty cache)", 0, 1);
  row("warm (cache filled)", 1, wall.size());
  return 0;
}
