// gptoss-conformance <logits|tokenizer|harmony> [--tokenizer-json PATH] [flags] DIR
// gptoss-conformance backend-ops [-b BACKEND] [-o OP] [...] (backend_ops.cpp)
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "tools/conformance/conformance.hpp"

namespace {
int usage() {
  std::fprintf(
      stderr,
      "usage: gptoss-conformance <logits|tokenizer|harmony> [--tokenizer-json PATH] "
      "[options] DIR\n"
      "       gptoss-conformance backend-ops [-b BACKEND] [-o OP[,OP...]] [--shapes ...]\n"
      "                                      [--precision exact|fast] [--perf N] [--list]\n"
      "  logits options: --format hf|gguf|both (default both), --precision exact|fast\n"
      "                  (default exact), --kv f32|bf16 (default f32), --backend NAME\n"
      "                  (default cpu), --split layer|none|expert (default layer: every\n"
      "                  device of the backend, e.g. GPTOSS_CPU_DEVICES=2), --verbose,\n"
      "                  --reference-backend NAME (the reference rows are that backend's,\n"
      "                  exact precision and an f32 cache, not the files': a check of one\n"
      "                  backend against another, on any model the manifest names)\n");
  return 2;
}

// An option of a subcommand: its name and, for one that takes a value, the values it allows
// ("" for any, e.g. a path); nullptr for a flag.
struct Option {
  const char* name;
  const char* values;
};
constexpr Option kCommon[] = {{"--tokenizer-json", ""}};
constexpr Option kLogits[] = {{"--format", "hf|gguf|both"},
                              {"--precision", "exact|fast"},
                              {"--kv", "f32|bf16"},
                              {"--backend", ""},
                              {"--split", "layer|none|expert"},
                              {"--reference-backend", ""},
                              {"--verbose", nullptr}};

const Option* find_option(const std::string& kind, const std::string& name) {
  for (const Option& o : kCommon)
    if (name == o.name) return &o;
  if (kind == "logits")
    for (const Option& o : kLogits)
      if (name == o.name) return &o;
  return nullptr;
}

bool allowed(const char* values, const std::string& v) {
  if (*values == '\0') return true;
  return v.find('|') == std::string::npos &&
         ("|" + std::string(values) + "|").find("|" + v + "|") != std::string::npos;
}

// A mistyped or incomplete option is a usage error (exit 2) that names it: it must never be
// taken for the folder or silently run a different configuration.
int bad_option(const std::string& message) {
  std::fprintf(stderr, "gptoss-conformance: %s\n", message.c_str());
  return usage();
}
}  // namespace

int main(int argc, char** argv) {
  using namespace gptoss::conformance;
  if (argc >= 2 && std::strcmp(argv[1], "backend-ops") == 0) {
    try {
      return run_backend_ops(std::vector<std::string>(argv + 2, argv + argc));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gptoss-conformance: %s\n", e.what());
      std::printf("0 passed, 1 failed\n");
      return 1;
    }
  }
  if (argc < 3) return usage();
  std::string kind = argv[1];
  if (kind != "logits" && kind != "tokenizer" && kind != "harmony") return usage();
  Args args;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) == 0) {
      const Option* o = find_option(kind, a);
      if (o == nullptr) return bad_option("unknown option " + a + " for " + kind);
      if (o->values == nullptr) {
        args.extra.push_back(a);
        continue;
      }
      // The value, and the folder after it: an option with nothing after it but the folder
      // has no value.
      const std::string expect = *o->values ? std::string(o->values) : "a value";
      if (i + 2 >= argc || std::strncmp(argv[i + 1], "--", 2) == 0)
        return bad_option("option " + a + " needs " + expect + " (before DIR)");
      const std::string v = argv[++i];
      if (!allowed(o->values, v))
        return bad_option("option " + a + " takes " + expect + ", not '" + v + "'");
      if (a == "--tokenizer-json") {
        args.tokenizer_json = v;
      } else {
        args.extra.push_back(a);
        args.extra.push_back(v);
      }
    } else if (args.dir.empty()) {
      args.dir = a;
    } else {
      return bad_option("more than one DIR ('" + args.dir + "', '" + a + "')");
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
