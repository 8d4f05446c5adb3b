#pragma once
// Token-at-a-time parser of model output in the Harmony format (docs/harmony.md, "Parsing").
// Strict mode follows openai-harmony's StreamableParser and throws on malformed input;
// tolerant mode returns the same messages where the reference succeeds and recovers where it
// would fail, never dropping text. One thread at a time.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "libgptoss/harmony/header_parser.hpp"
#include "libgptoss/harmony/message.hpp"

namespace gptoss {
class Tokenizer;
}

namespace gptoss::harmony {

class StreamParser {
 public:
  // `first_role`: the role of the first message when generation starts right after
  // "<|start|>assistant" (the stream begins inside its header); nullopt if the stream begins
  // with <|start|>. Throws gptoss::Error(invalid_argument) if the tokenizer lacks a Harmony
  // formatting token.
  StreamParser(std::shared_ptr<const Tokenizer> tokenizer, std::optional<Role> first_role, bool strict);

  // Strict mode throws gptoss::Error(invalid_argument) for malformed input; after that every
  // call throws gptoss::Error(invalid_state). Tolerant mode never throws for any token id.
  void process(uint32_t token);
  // End of stream: closes a message in progress (a header in progress is an error in strict mode).
  void process_eos();

  const std::vector<Message>& messages() const { return messages_; }
  // Header of the message whose content is being read; nullopt in a header or between messages.
  const std::optional<ParsedHeader>& current_header() const { return header_; }
  // Role of the message in progress (also known while its header is read, when given).
  std::optional<Role> current_role() const;
  // Text produced by the last token; nullopt if it produced none.
  const std::optional<std::string>& last_content_delta() const { return last_delta_; }
  // Text of the message in progress so far ("" outside content).
  const std::string& current_content() const { return content_; }
  bool strict() const { return strict_; }

 private:
  enum class State { expect_start, header, content };

  void process_expect_start(uint32_t token);
  void process_header(uint32_t token);
  void process_content(uint32_t token);
  void close_header_without_message();  // stop token or end of stream inside a header
  void begin_content(const std::string& header_text);
  void close_message();
  std::string header_text(bool lossy) const;
  bool is_stop(uint32_t token) const;
  void check_usable() const;

  std::shared_ptr<const Tokenizer> tok_;
  bool strict_;
  uint32_t start_id_, message_id_, end_id_, return_id_, call_id_;

  State state_;
  std::optional<Role> next_role_;  // role given for the header being read
  std::vector<uint32_t> header_tokens_;
  std::optional<ParsedHeader> header_;
  std::string content_;          // emitted text of the message in progress
  std::string pending_bytes_;    // bytes that do not form complete characters yet
  size_t pending_bad_ids_ = 0;   // ids outside the vocabulary since the last good token
  std::optional<std::string> last_delta_;
  std::vector<Message> messages_;
  std::string failure_;  // set once strict parsing failed
};

// Bytes of one token id, or nullopt for an id outside the vocabulary. Besides the
// tokenizer's ids this knows openai-harmony's extra <|reserved_201088|> (one past the
// 201,088-row vocabulary), so Harmony decoding matches the reference.
std::optional<std::string_view> harmony_token_bytes(const Tokenizer& tokenizer, uint32_t id);

}  // namespace gptoss::harmony
