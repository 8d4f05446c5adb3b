#pragma once
// What an output message is to the API: a function call (to=functions.NAME), reasoning (the
// analysis channel, and calls to tools this server does not offer, whose text must not reach
// the answer), or answer text (final, commentary preambles, no channel).
#include <string>

#include "engine/generation.hpp"

namespace gptoss_server {

enum class OutputKind { message, reasoning, function_call };

inline OutputKind output_kind(const MessageHeader& h, std::string* function_name = nullptr) {
  static const std::string prefix = "functions.";
  if (h.recipient.rfind(prefix, 0) == 0 && h.recipient.size() > prefix.size()) {
    if (function_name) *function_name = h.recipient.substr(prefix.size());
    return OutputKind::function_call;
  }
  if (!h.recipient.empty() || h.channel == "analysis") return OutputKind::reasoning;
  return OutputKind::message;
}

}  // namespace gptoss_server
