#pragma once
// Parses a decoded message header (the text between <|start|> and <|message|>, special
// tokens written literally) into author, recipient, channel and content type.
#include <optional>
#include <string>

#include "libgptoss/harmony/message.hpp"

namespace gptoss::harmony {

struct ParsedHeader {
  Role role = Role::assistant;
  std::optional<std::string> name;  // the author name of a tool message
  std::optional<std::string> recipient;
  std::optional<std::string> channel;
  std::optional<std::string> content_type;
};

struct HeaderParse {
  ParsedHeader header;
  // Words that are no header field, joined by single spaces (nullopt if none).
  std::optional<std::string> leftover;
};

// The reference algorithm (docs/harmony.md, "Parsing"). `role` is the role given for the
// first message, if any. With split_fields = false every word after the role is leftover
// (used for a message whose <|message|> never came). Throws gptoss::Error(invalid_argument)
// for an empty channel, a missing or unknown role.
HeaderParse parse_header(const std::string& header, std::optional<Role> role, bool split_fields);

// Never throws, for tolerant parsing of what the reference rejects: the channel is taken if
// present, the role word if known (an unknown first word names a tool author; `fallback_role`
// if there are no words), the first "to=X" word is the recipient, the first
// "<|constrain|>X" word (or "<|constrain|> X") the content type; every other word is
// leftover, in order.
HeaderParse parse_header_tolerant(const std::string& header, std::optional<Role> role,
                                  Role fallback_role);

}  // namespace gptoss::harmony
