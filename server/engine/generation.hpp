#pragma once
// What the scheduler is asked to generate for one sequence, and what it reports back: the
// output as a stream of messages (begin, text deltas, end) and how it finished. Endpoint
// formatters (api/*_format.hpp) turn these into OpenAI objects and events.
#include <gptoss.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gptoss_server {

// A compiled grammar (gptoss_grammar_create_*), shared by every request of the same shape.
using Grammar = std::shared_ptr<gptoss_grammar>;

// How tokens are drawn; request parsing (api/request.hpp) fills it from each endpoint's fields.
struct Sampling {
  double temperature = 1.0;
  double top_p = 1.0;
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  std::optional<uint64_t> seed;  // none: random
  int logprobs = -1;             // -1: none; 0..20: the sampled token's and N alternatives
};

struct GenerationSpec {
  std::vector<uint32_t> prompt;
  Sampling sampling;
  size_t max_tokens = 0;  // tokens to generate at most (the caller caps it by the context)
  bool harmony = true;    // parse the output as Harmony messages; else raw text
  std::vector<std::string> stop;  // stop strings, matched in the answer text
  bool ignore_stop_tokens = false;  // /bench: always generate max_tokens
  Grammar grammar;                  // what the output must be (null: anything)
  int64_t max_reasoning_tokens = -1;  // reasoning (and preamble) tokens before the answer is forced; < 0: no limit
  // The grammar's output must be complete within max_tokens (structured output): the
  // constraint is given max_tokens as its budget and steers to its shortest completion at
  // the edge, so the output ends with its stop token instead of being cut.
  bool complete_within_max_tokens = false;
};

struct TokenLogprob {
  uint32_t token = 0;
  float logprob = 0;
  std::vector<std::pair<uint32_t, float>> top;  // most likely first
};

// A message of the output, as the Harmony header says (empty fields: not given).
struct MessageHeader {
  std::string role = "assistant";
  std::string channel;
  std::string recipient;
  std::string content_type;
};

struct OutputEvent {
  enum class Kind { begin, delta, end };
  Kind kind = Kind::delta;
  MessageHeader header;                // begin
  std::string text;                    // delta
  bool complete = true;                // end: false when the length limit cut the message
  std::vector<TokenLogprob> logprobs;  // delta: the content tokens this text came from
};

enum class FinishReason { stop, length, cancelled, error };

struct Usage {
  size_t prompt_tokens = 0;
  size_t cached_tokens = 0;  // prompt tokens whose KV came from the prefix cache
  size_t output_tokens = 0;
  size_t reasoning_tokens = 0;  // output tokens of analysis messages
  // Speculative decoding (extension, usage.speculative): drafted tokens verified, and of them
  // the ones kept (each a forward step saved). Absent when the server does not speculate.
  bool speculative = false;
  size_t drafted_tokens = 0;
  size_t accepted_tokens = 0;
};

struct Finish {
  FinishReason reason = FinishReason::stop;
  std::string error;  // FinishReason::error
  Usage usage;
  bool closed_by_budget = false;  // the token budget forbade a token the grammar allowed
};

}  // namespace gptoss_server
