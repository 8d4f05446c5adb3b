// gptoss-bench: prefill/decode throughput of a model through the public C API, like
// llama-bench, and per-kernel microbenchmarks of the CPU backend (--kernels).
//
//   gptoss-bench -m MODEL [-p 512] [-n 128] [-t THREADS] [-r 5] [--tokenizer-json PATH]
//                [--precision fast|exact] [--kv f32|bf16] [-b N] [--mmap 0|1] [--output md|json]
//   gptoss-bench --kernels [-t THREADS] [--output md|json]
//   gptoss-bench --read-bw [-t THREADS] [--output md|json]
//   gptoss-bench --read-probe -m MODEL [-n 128] [-t THREADS] [--output md|json]
//   gptoss-bench --constrained -m MODEL [-n 128] [-t THREADS] [--output md|json]
//   gptoss-bench --speculative -m MODEL [-p 128] [-n 64] [-r 3] [--draft-max 16] [--logit-rows]
//   gptoss-bench --prompt-lookup -m MODEL [-p 64] [-n 64] [-r 3] [--draft-max 8]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench.hpp"

namespace {
void usage() {
  std::fprintf(
      stderr,
      "usage: gptoss-bench -m MODEL [-p N_PROMPT=512] [-n N_GEN=128] [-t THREADS]\n"
      "                    [-r REPS=5] [--tokenizer-json PATH] [--precision fast|exact]\n"
      "                    [--kv f32|bf16 (KV cache dtype; default f32)]\n"
      "                    [-b N (also: N sequences decoding together, aggregate t/s)]\n"
      "                    [--mmap 0|1 (1: map the files; 0: read them into huge pages)]\n"
      "                    [--backend auto|cpu|cuda|hip] [--peak-gbps G (a device's memory\n"
      "                     bandwidth: decode as %% of it, instead of a host read test)]\n"
      "                    [-v (library log on stderr; with GPTOSS_CPU_PROFILE=1 also\n"
      "                     time and weight GB/s per op)]\n"
      "                    [--output md|json]\n"
      "       gptoss-bench --kernels [-t THREADS] [--output md|json]\n"
      "                    (every level the CPU has; GPTOSS_CPU_ISA=L: level L alone)\n"
      "       gptoss-bench --read-bw [-t THREADS] [--output md|json]\n"
      "                    (the read test alone, e.g. beside another program's decode)\n"
      "       gptoss-bench --read-probe -m MODEL [-n TOKENS=128] [-t THREADS]\n"
      "                    [--output md|json]\n"
      "                    (decode against pure loads of its bytes after every token:\n"
      "                     a 1 GiB buffer, the model's own files)\n"
      "       gptoss-bench --constrained -m MODEL [-n TOKENS=128] [-t THREADS]\n"
      "                    [--output md|json]\n"
      "                    (allowed-token mask time per token under a Harmony grammar\n"
      "                     and a nested JSON Schema, beside the decode time per token)\n");
  std::fputs(
      "       gptoss-bench --speculative -m MODEL [-p N_PROMPT] [-n N_GEN] [-r REPS]\n"
      "                    [--draft-max K=16] [--logit-rows] [--precision fast|exact]\n"
      "                    [--output md|json]\n"
      "                    (one step verifying k = 1..16 tokens against a plain step; an\n"
      "                     oracle drafter replaying a greedy run against plain decoding;\n"
      "                     --logit-rows: also k tokens as a plain forward pass, so the\n"
      "                     difference is what one logit row per position costs; -n 0: the\n"
      "                     verify cost only)\n"
      "       gptoss-bench --prompt-lookup -m MODEL [-p N_PROMPT] [-n N_GEN] [-r REPS]\n"
      "                    [--draft-max K] [--precision fast|exact] [--output md|json]\n"
      "                    (prompt lookup against plain decoding: a file restated with one\n"
      "                     edit, its first N_GEN tokens forced as the answer, and a prose\n"
      "                     answer that restates nothing; the model's own\n"
      "                     N_GEN tokens after an N_PROMPT-token prompt through the\n"
      "                     speculator; -n 0: the whole file, no free generation)\n",
      stderr);
}
}  // namespace

int main(int argc, char** argv) {
  gptoss::bench::Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gptoss-bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    auto count = [&]() -> size_t {
      const char* v = value();
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v, &end, 10);
      if (end == v || *end != '\0') {
        std::fprintf(stderr, "gptoss-bench: %s: not a number: %s\n", a.c_str(), v);
        std::exit(2);
      }
      return size_t(n);
    };
    if (a == "-m" || a == "--model") o.model = value();
    else if (a == "-p" || a == "--n-prompt") o.n_prompt = count();
    else if (a == "-n" || a == "--n-gen") o.n_gen = count();
    else if (a == "-t" || a == "--threads") o.threads = unsigned(count());
    else if (a == "-r" || a == "--repetitions") o.reps = count();
    else if (a == "--tokenizer-json") o.tokenizer_json = value();
    else if (a == "--backend") o.backend = value();
    else if (a == "--peak-gbps") {
      const char* v = value();
      char* end = nullptr;
      o.peak_gbps = std::strtod(v, &end);
      if (end == v || *end != '\0' || !(o.peak_gbps > 0)) {
        std::fprintf(stderr, "gptoss-bench: --peak-gbps must be a positive number, got %s\n", v);
        return 2;
      }
    }
    else if (a == "--kernels") o.kernels = true;
    else if (a == "--read-bw") o.read_bw = true;
    else if (a == "--read-probe") o.read_probe = true;
    else if (a == "--constrained") o.constrained = true;
    else if (a == "--speculative") o.speculative = true;
    else if (a == "--draft-max") o.draft_max = count();
    else if (a == "--logit-rows") o.logit_rows = true;
    else if (a == "--prompt-lookup") o.prompt_lookup = true;
    else if (a == "-v" || a == "--verbose") {
      // The library's log on stderr (with GPTOSS_CPU_PROFILE=1: time per op at the end).
      gptoss_set_log_callback(
          [](gptoss_log_level, const char* m, void*) { std::fprintf(stderr, "gptoss: %s\n", m); },
          gptoss_log_level_info, nullptr);
    }
    else if (a == "--mmap") {
      const size_t v = count();
      if (v > 1) {
        std::fprintf(stderr, "gptoss-bench: --mmap must be 0 or 1\n");
        return 2;
      }
      o.use_mmap = v == 1;
    } else if (a == "--precision") {
      const std::string v = value();
      if (v != "fast" && v != "exact") {
        std::fprintf(stderr, "gptoss-bench: --precision must be fast or exact, got %s\n", v.c_str());
        return 2;
      }
      o.exact = v == "exact";
    }
    else if (a == "-b" || a == "--batch") {
      o.batch = count();
      if (o.batch < 1 || o.batch > 64) {
        std::fprintf(stderr, "gptoss-bench: -b must be 1..64\n");
        return 2;
      }
    }
    else if (a == "--kv") {
      const std::string v = value();
      if (v != "f32" && v != "bf16") {
        std::fprintf(stderr, "gptoss-bench: --kv must be f32 or bf16, got %s\n", v.c_str());
        return 2;
      }
      o.kv_bf16 = v == "bf16";
    }
    else if (a == "-o" || a == "--output") {
      const std::string v = value();
      if (v != "md" && v != "json") {
        usage();
        return 2;
      }
      o.json = v == "json";
    } else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else {
      std::fprintf(stderr, "gptoss-bench: unknown argument %s\n", a.c_str());
      usage();
      return 2;
    }
  }
  if (o.kernels) return gptoss::bench::run_kernel_bench(o);
  if (o.read_bw) {
    const double gbs =
        gptoss::bench::measure_read_bandwidth(gptoss::bench::threads_or_all(o.threads));
    std::printf(o.json ? "{\"read_bandwidth_gbs\": %.3f}\n" : "read bandwidth %.2f GB/s\n", gbs);
    return 0;
  }
  if (o.draft_max < 1 || o.draft_max > 256) {
    std::fprintf(stderr, "gptoss-bench: --draft-max must be 1..256\n");
    return 2;
  }
  if (o.model.empty() || o.n_prompt == 0 || o.reps == 0 || ((o.read_probe || o.constrained) && o.n_gen == 0)) {
    usage();
    return 2;
  }
  try {
    if (o.constrained) return gptoss::bench::run_constrained_bench(o);
    if (o.speculative) return gptoss::bench::run_speculative_bench(o);
    if (o.prompt_lookup) return gptoss::bench::run_lookup_bench(o);
    return o.read_probe ? gptoss::bench::run_read_probe(o) : gptoss::bench::run_model_bench(o);
  } catch (const gptoss::error& e) {
    std::fprintf(stderr, "gptoss-bench: %s\n", e.what());
    return 1;
  }
}
