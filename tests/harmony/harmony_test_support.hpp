#pragma once
// Shared by the Harmony tests: the real tokenizer (loaded once) and helpers that turn
// Harmony text into tokens and run the streaming parser over them.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "libgptoss/harmony/stream_parser.hpp"
#include "libgptoss/tokenizer/tokenizer.hpp"
#include "support/paths.hpp"

namespace gptoss::test {

inline std::shared_ptr<const Tokenizer> harmony_tokenizer() {
  static const std::shared_ptr<const Tokenizer> tok = Tokenizer::from_json_file(tokenizer_json());
  return tok;
}

// Special-token strings become their ids (how a model's output looks as tokens).
inline std::vector<uint32_t> harmony_tokens(const std::string& text) {
  return harmony_tokenizer()->encode_with_specials(text);
}

// Feeds every token, then end-of-stream if `eos`.
inline std::vector<harmony::Message> parse_all(const std::vector<uint32_t>& tokens,
                                               std::optional<harmony::Role> role, bool strict,
                                               bool eos = true) {
  harmony::StreamParser p(harmony_tokenizer(), role, strict);
  for (uint32_t t : tokens) p.process(t);
  if (eos) p.process_eos();
  return p.messages();
}

inline std::string text_of(const harmony::Message& m) {
  return std::get<harmony::TextContent>(m.content.at(0)).text;
}

}  // namespace gptoss::test
