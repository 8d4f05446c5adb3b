// gptoss-conformance <logits|tokenizer|harmony> [--tokenizer-json PATH] [flags] DIR
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "tools/conformance/conformance.hpp"

namespace {
int usage() {
  std::fprintf(stderr,
               "usage: gptoss-conformance <logits|tokenizer|harmony> [--tokenizer-json PATH] "
               "[options] DIR\n"
               "  logits options: --format hf|gguf|both (default both), --precision exact|fast\n"
               "                  (default exact), --kv f32|bf16 (default f32), --verbose\n");
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace gptoss::conformance;
  if (argc < 3) return usage();
  std::string kind = argv[1];
  Args args;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--tokenizer-json" && i + 1 < argc) {
      args.tokenizer_json = argv[++i];
    } else if (a.rfind("--", 0) == 0) {
      args.extra.push_back(a);
      if (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0 && i + 2 < argc)
        args.extra.push_back(argv[++i]);
    } else if (args.dir.empty()) {
      args.dir = a;
    } else {
      return usage();
    }
  }
  if (args.dir.empty()) return usage();
  try {
    if (kind == "logits") return run_logits(args);
    if (kind == "tokenizer") return run_tokenizer(args);
    if (kind == "harmony") return run_harmony(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gptoss-conformance: %s\n", e.what());
    std::printf("0 passed, 1 failed\n");
    return 1;
  }
  return usage();
}
