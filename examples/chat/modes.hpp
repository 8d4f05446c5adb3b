#pragma once
// The three modes of `gptoss`. Each returns the process exit status.
#include <string>
#include <vector>

#include <gptoss.hpp>
#include "cli_options.hpp"

namespace gptoss_cli {

int run_chat(const Options& options);
int run_generate(const Options& options);
int run_getp(const Options& options);

// Tokens of one prompt: Harmony-rendered as a single user turn, or encoded as is (--raw,
// special-token strings allowed).
std::vector<uint32_t> prompt_tokens(gptoss_tokenizer_t tokenizer, const Options& options,
                                    const std::string& prompt);

// Model facts on stderr (--verbose).
void print_model_info(gptoss_model_t model, uint64_t seed);

// What every mode starts from: the loaded model, its tokenizer and the sampling seed (the
// model facts are printed with --verbose).
struct Session {
  gptoss::model model;
  gptoss::tokenizer tokenizer;
  uint64_t seed;
};
Session open_session(const Options& options);

}  // namespace gptoss_cli
