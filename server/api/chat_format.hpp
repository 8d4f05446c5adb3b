#pragma once
// Chat Completions and Completions output, one choice at a time: stream entries (the
// `choices[i]` of a chunk) and the non-streaming choice, from the same accumulated state.
#include <nlohmann/json.hpp>

#include <gptoss.h>

#include <string>
#include <vector>

#include "api/output_kind.hpp"
#include "engine/generation.hpp"

namespace gptoss_server {

using nlohmann::json;

// Chat: reasoning as `reasoning_content`, answer text as `content`, function calls as
// `tool_calls` (arguments streamed in pieces).
class ChatChoice {
 public:
  ChatChoice(gptoss_tokenizer_t tokenizer, int index, bool logprobs);
  std::vector<json> on_events(const std::vector<OutputEvent>& events);
  json finish_entry(const Finish& finish) const;  // delta {} with the finish_reason
  json choice(const Finish& finish) const;        // {index, message, logprobs, finish_reason}

 private:
  json entry(json delta, json logprobs = nullptr) const;
  const char* finish_reason(const Finish& finish) const;

  gptoss_tokenizer_t tokenizer_;
  int index_;
  bool logprobs_;
  bool started_ = false;
  OutputKind kind_ = OutputKind::message;
  std::string content_, reasoning_;
  json tool_calls_ = json::array();
  json content_logprobs_ = json::array();
};

// Completions: text (after the echoed prompt, when asked) with the legacy logprobs shape.
class CompletionChoice {
 public:
  CompletionChoice(gptoss_tokenizer_t tokenizer, int index, int logprobs, std::string echo);
  std::vector<json> on_events(const std::vector<OutputEvent>& events);
  json finish_entry(const Finish& finish) const;
  json choice(const Finish& finish) const;

 private:
  json entry(std::string text, json logprobs) const;
  json logprobs_of(const std::vector<TokenLogprob>& lps, size_t offset) const;

  gptoss_tokenizer_t tokenizer_;
  int index_;
  int logprobs_;
  std::string echo_;
  bool echo_sent_ = false;
  std::string text_;
  json all_logprobs_;
};

const char* finish_reason_name(FinishReason reason);
json chat_usage(const Usage& usage);
// The extension field usage.speculative of every endpoint: {drafted_tokens, accepted_tokens}.
json speculative_usage(const Usage& usage);

}  // namespace gptoss_server
