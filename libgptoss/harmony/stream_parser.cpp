#include "libgptoss/harmony/stream_parser.hpp"

#include "libgptoss/common/error.hpp"
#include "libgptoss/harmony/utf8.hpp"
#include "libgptoss/harmony/vocab.hpp"
#include "libgptoss/tokenizer/tokenizer.hpp"

namespace gptoss::harmony {
namespace {

uint32_t require_special(const Tokenizer& tok, std::string_view name) {
  auto id = tok.special_id(name);
  if (!id) fail(gptoss_status_invalid_argument, "tokenizer has no {} token: not a Harmony tokenizer", name);
  return *id;
}

Message message_of(const ParsedHeader& h, std::string text) {
  Message m = Message::text(h.role, std::move(text));
  m.name = h.name;
  m.recipient = h.recipient;
  m.channel = h.channel;
  m.content_type = h.content_type;
  return m;
}

}  // namespace

StreamParser::StreamParser(std::shared_ptr<const Tokenizer> tokenizer, std::optional<Role> first_role,
                           bool strict)
    : tok_(std::move(tokenizer)), strict_(strict) {
  if (!tok_) fail(gptoss_status_invalid_argument, "tokenizer must not be NULL");
  start_id_ = require_special(*tok_, "<|start|>");
  message_id_ = require_special(*tok_, "<|message|>");
  end_id_ = require_special(*tok_, "<|end|>");
  return_id_ = require_special(*tok_, "<|return|>");
  call_id_ = require_special(*tok_, "<|call|>");
  state_ = first_role ? State::header : State::expect_start;
  next_role_ = first_role;
}

std::optional<Role> StreamParser::current_role() const {
  if (state_ == State::content) return header_->role;
  if (state_ == State::header) return next_role_;
  return std::nullopt;
}

bool StreamParser::is_stop(uint32_t t) const { return t == end_id_ || t == return_id_ || t == call_id_; }

void StreamParser::check_usable() const {
  if (!failure_.empty())
    fail(gptoss_status_invalid_state, "the parser stopped at an earlier error: {}", failure_);
}

void StreamParser::process(uint32_t token) {
  check_usable();
  try {
    switch (state_) {
      case State::expect_start: process_expect_start(token); break;
      case State::header: process_header(token); break;
      case State::content: process_content(token); break;
    }
  } catch (const Error& e) {
    failure_ = e.what();
    throw;
  }
}

void StreamParser::process_eos() {
  check_usable();
  try {
    if (state_ == State::header) {
      if (strict_)
        fail(gptoss_status_invalid_argument, "unexpected end of stream while reading a message header");
      close_header_without_message();
    } else if (state_ == State::content) {
      close_message();
    }
  } catch (const Error& e) {
    failure_ = e.what();
    throw;
  }
}

void StreamParser::process_expect_start(uint32_t token) {
  if (token == start_id_) {
    state_ = State::header;
    header_tokens_.clear();
    return;
  }
  if (strict_)
    fail(gptoss_status_invalid_argument, "unexpected token {} between messages (expected <|start|> {})",
         token, start_id_);
  if (is_stop(token)) return;  // a stray stop token carries no text
  // The model skipped "<|start|>assistant" (model output is the assistant speaking).
  state_ = State::header;
  header_tokens_.clear();
  next_role_ = Role::assistant;
  process_header(token);
}

void StreamParser::process_header(uint32_t token) {
  if (token == message_id_) {
    begin_content(header_text(!strict_));
  } else if (!strict_ && is_stop(token)) {
    close_header_without_message();
  } else if (!strict_ && token == start_id_) {
    close_header_without_message();  // the model restarted: keep what the old header said
    state_ = State::header;
  } else {
    header_tokens_.push_back(token);
  }
}

std::string StreamParser::header_text(bool lossy) const {
  std::string bytes;
  for (uint32_t id : header_tokens_) {
    auto b = harmony_token_bytes(*tok_, id);
    if (!b && !lossy) fail(gptoss_status_invalid_argument, "could not decode header: unknown token id {}", id);
    bytes += b ? *b : kReplacementChar;
  }
  if (is_valid_utf8(bytes)) return bytes;
  if (!lossy) fail(gptoss_status_invalid_argument, "could not decode header: invalid UTF-8");
  return utf8_lossy(bytes);
}

void StreamParser::begin_content(const std::string& text) {
  HeaderParse hp;
  bool parsed = false;
  try {
    hp = parse_header(text, next_role_, true);
    parsed = !hp.leftover.has_value();
    if (!parsed && strict_)
      fail(gptoss_status_invalid_argument, "unexpected tokens remaining in message header: \"{}\"", *hp.leftover);
  } catch (const Error&) {
    if (strict_) throw;
  }
  if (!parsed) hp = parse_header_tolerant(text, next_role_, Role::assistant);
  header_ = hp.header;
  next_role_.reset();
  header_tokens_.clear();
  state_ = State::content;
  content_.clear();
  // Tolerant mode: words the header could not place are the start of the content.
  if (hp.leftover) {
    content_ = *hp.leftover;
    last_delta_ = hp.leftover;
  }
}

void StreamParser::close_header_without_message() {
  const bool first_with_role = next_role_.has_value();
  const std::string text = header_text(true);
  const bool had_tokens = !header_tokens_.empty();
  state_ = State::expect_start;
  header_tokens_.clear();
  std::optional<Role> role = next_role_;
  next_role_.reset();
  if (!had_tokens) return;
  HeaderParse hp;
  try {
    hp = parse_header(text, role, false);
  } catch (const Error&) {
    hp = parse_header_tolerant(text, role, Role::assistant);
  }
  // The reference keeps such a message only for the first header with a given role; we also
  // keep later ones that carry text, so nothing the model wrote is lost.
  if (first_with_role || hp.leftover) messages_.push_back(message_of(hp.header, hp.leftover.value_or("")));
}

void StreamParser::process_content(uint32_t token) {
  if (is_stop(token)) {
    close_message();
    return;
  }
  if (!strict_ && token == start_id_) {  // a missing <|end|>
    close_message();
    state_ = State::header;
    return;
  }
  auto bytes = harmony_token_bytes(*tok_, token);
  if (!bytes) {
    ++pending_bad_ids_;
    last_delta_.reset();
    return;
  }
  std::string delta;
  if (pending_bad_ids_ > 0) {  // the next good token shows that nothing completes them
    delta += utf8_lossy(pending_bytes_);
    delta += kReplacementChar;
    pending_bytes_.clear();
    pending_bad_ids_ = 0;
  }
  pending_bytes_ += *bytes;
  Utf8Check check = check_utf8(pending_bytes_);
  delta.append(pending_bytes_, 0, check.valid_up_to);
  size_t consumed = check.valid_up_to;
  if (check.error_len) {  // one repair per token; later bytes wait for the next token
    delta += kReplacementChar;
    consumed += *check.error_len;
  }
  pending_bytes_.erase(0, consumed);
  content_ += delta;
  if (delta.empty()) last_delta_.reset();
  else last_delta_ = std::move(delta);
}

void StreamParser::close_message() {
  std::string text = std::move(content_);
  text += utf8_lossy(pending_bytes_);  // these bytes came before the unknown ids, if any
  if (pending_bad_ids_ > 0) text += kReplacementChar;
  messages_.push_back(message_of(*header_, std::move(text)));
  content_.clear();
  pending_bytes_.clear();
  pending_bad_ids_ = 0;
  header_.reset();
  last_delta_.reset();
  state_ = State::expect_start;
}

}  // namespace gptoss::harmony
