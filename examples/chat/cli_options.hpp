#pragma once
// The command line of `gptoss`: one mode (chat | generate | getp) and its flags.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gptoss_cli {

// A bad command line or input file: reported as one line, exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Mode { chat, generate, getp };
// What generate and getp print for each prompt.
enum class OutputFormat { text, ids, json };

struct Options {
  Mode mode = Mode::chat;

  // Model and runtime.
  std::string model_path;      // empty: the tiny synthetic model (generated on first use)
  std::string tokenizer_path;  // empty: the model's own
  std::string backend = "auto";
  uint32_t threads = 0;        // 0: all cores
  bool exact = false;          // --precision exact
  uint32_t layers = 0;         // 0: all
  size_t context_length = 8192;
  size_t max_kv = 0;           // tokens of a shared KV pool; 0: a private pool per context
  bool kv_bf16 = false;        // --kv bf16: the KV cache in bf16 (default f32)
  bool memory_check = true;    // --no-memory-check: load even what exceeds available memory

  // Sampling.
  float temperature = 1.0f;
  float top_p = 1.0f;
  uint32_t top_k = 0;
  float min_p = 0.0f;
  std::optional<uint64_t> seed;  // unset: a random seed (printed with --verbose)
  size_t max_tokens = 1024;
  bool max_tokens_given = false;  // --max-tokens on the command line: also a constrained answer's budget

  // Conversation.
  bool harmony = true;         // --raw / --no-harmony send text as is
  std::string reasoning_effort = "medium";
  std::string system;          // replaces the model identity line of the system message
  std::string developer;       // developer instructions
  std::optional<bool> show_reasoning;  // unset: shown in chat, hidden in generate

  // Constrained decoding.
  bool constrain = true;         // --no-constrain: sample freely (no Harmony structure enforced)
  std::string json_schema_path;  // --json-schema: the answer's JSON Schema (the whole output with --raw)
  std::string json_schema;       // its text, read when the flags are parsed
  std::optional<int64_t> max_reasoning_tokens;

  // Speculative decoding (docs/speculative.md).
  std::string draft = "ngram";  // --draft: none, ngram (prompt lookup) or a draft model's path
  uint32_t draft_max = 8;       // --draft-max: most drafted tokens per step

  // Input and output.
  std::optional<std::string> input;  // generate: the prompt ("-" = stdin); getp: prompts file
  std::string output;          // getp: outputs file (empty or "-" = stdout)
  OutputFormat format = OutputFormat::text;
  size_t batch = 32;           // getp: contexts processed together
  bool verbose = false;
  bool quiet = false;          // no notices, no stats line
};

// Parses argv. Throws UsageError with a one-line message for unknown flags, missing values
// and out-of-range numbers. Returns nullopt when --help or --version was printed.
std::optional<Options> parse_options(int argc, char** argv);

void print_usage(std::FILE* out);

}  // namespace gptoss_cli
