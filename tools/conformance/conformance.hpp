#pragma once
// Subcommands of gptoss-conformance. Each runs one folder in the format of
// ../shared/conformance/<kind>/, prints one line per failure and a final
// "N passed, M failed" line, and returns the process exit code (0 only if nothing failed).
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

}  // namespace gptoss::conformance
