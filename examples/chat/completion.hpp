#pragma once
// A completion as it streams: feeds each token to the Harmony parser (or decodes it as raw
// text) and shows it — final answer plain, reasoning (analysis, and commentary preambles
// without recipient) dimmed or hidden, tool calls labelled.
#include <cstdio>
#include <string>
#include <vector>

#include <gptoss.hpp>
#include "generation.hpp"

namespace gptoss_cli {

struct Display {
  std::FILE* out = nullptr;   // null: collect only, print nothing
  bool show_reasoning = true;  // analysis and preambles; the answer and tool calls always show
  bool color = false;         // ANSI dim/colour (only when `out` is a terminal)
};

class Completion final : public TokenSink {
 public:
  Completion(gptoss_tokenizer_t tokenizer, bool harmony, Display display);
  void on_token(uint32_t token) override;

  // Ends the stream (closes an open message, ends the printed line). Idempotent.
  void finish();
  // Parsed assistant messages as a JSON array (Harmony; "[]" for raw).
  const std::string& messages_json() const { return messages_json_; }
  // The answer: text of the final channel (Harmony) or every decoded byte (raw).
  std::string answer() const;
  const std::vector<uint32_t>& tokens() const { return tokens_; }

 private:
  enum class Section { none, answer, reasoning, tool_call };
  void show(Section section, const gptoss_harmony_state& state, std::string_view delta);
  void close_section();
  void write(std::string_view text);

  gptoss_tokenizer_t tokenizer_;
  bool harmony_;
  Display display_;
  gptoss::harmony_parser parser_;
  std::vector<uint32_t> tokens_;
  std::string raw_text_;
  std::string streamed_answer_;  // answer text shown while streaming
  std::string messages_json_ = "[]";
  bool finished_ = false;

  Section section_ = Section::none;
  size_t section_message_ = 0;   // index of the message the open section belongs to
  char last_char_ = '\n';
};

}  // namespace gptoss_cli
