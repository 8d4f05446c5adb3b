#pragma once
// JSON <-> conversation model, in the Message shape of docs/harmony.md (the shape of the
// shared conformance cases, plus "content" as a plain string). Every error is
// gptoss::Error(invalid_argument) whose message starts with the path of the bad field, e.g.
// `messages[2].content[0].reasoning_effort: expected "low", "medium" or "high"`.
#include <string>
#include <string_view>
#include <vector>

#include "libgptoss/harmony/message.hpp"

namespace gptoss::harmony {

// Parses JSON text (with order-preserving objects); errors name the byte position, and nesting
// deeper than kMaxJsonDepth (libgptoss/common/json.hpp) is refused.
Json parse_json_text(std::string_view text, std::string_view what);

Message message_from_json(const Json& j, const std::string& path);
// A "tools" object: {"<key>": Namespace, ...} (docs/harmony.md).
ToolNamespaces namespaces_from_json(const Json& j, const std::string& path);
// {"messages": [Message...]} or a bare [Message...].
std::vector<Message> conversation_from_json(const Json& j);

Json message_to_json(const Message& m);
Json messages_to_json(const std::vector<Message>& messages);

}  // namespace gptoss::harmony
