#pragma once
// Subcommands of gptoss-conformance. logits, tokenizer and harmony each run one folder of the
// shared conformance data (GPTOSS_SHARED_DIR/conformance/<kind>/); backend-ops runs every
// backend slot against the CPU's scalar reference. Each prints a final "N passed, M failed"
// line and returns the process exit code (0 only if nothing failed).
#include <string>
#include <vector>

namespace gptoss::conformance {

struct Args {
  std::string dir;             // the folder to run
  std::string tokenizer_json;  // --tokenizer-json PATH (may be empty)
  std::vector<std::string> extra;  // subcommand-specific flags, as given
};

int run_logits(const Args& args);
int run_tokenizer(const Args& args);
int run_harmony(const Args& args);
// backend-ops takes no DIR: its arguments as given (backend_ops.cpp).
int run_backend_ops(const std::vector<std::string>& args);

}  // namespace gptoss::conformance
