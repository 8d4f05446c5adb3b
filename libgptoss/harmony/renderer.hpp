#pragma once
// Conversation -> Harmony tokens. Rendering first produces pieces (text, or one formatting
// token such as <|start|>); the literal text of the pieces is the prompt as a string, and
// tokens come from encoding every text piece on its own as plain text (a user writing
// "<|end|>" gets text tokens, never the special token).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libgptoss/harmony/message.hpp"

namespace gptoss {
class Tokenizer;
}

namespace gptoss::harmony {

enum class FormatToken { start, message, end, return_, call, channel, constrain };
std::string_view format_token_string(FormatToken t);  // "<|start|>", ...

struct Piece {
  std::string text;                 // used when !token
  std::optional<FormatToken> token;
};
using Pieces = std::vector<Piece>;

struct RenderOptions {
  bool conversation_has_function_tools = false;
};

struct ConversationConfig {
  // Drop chain of thought that precedes the first final answer once the last assistant
  // message is a final answer (docs/harmony.md, "Chain of thought").
  bool auto_drop_analysis = false;
};

// True if any developer message declares a non-empty "functions" namespace.
bool conversation_has_function_tools(const std::vector<Message>& messages);
// The messages that survive the auto_drop_analysis rule, in order.
std::vector<const Message*> messages_to_render(const std::vector<Message>& messages,
                                               const ConversationConfig& config);

// Throws gptoss::Error(invalid_argument) for a tool message without a name, or system /
// developer content in a message of another role.
Pieces render_message(const Message& message, const RenderOptions& options);
Pieces render_conversation(const std::vector<Message>& messages, const ConversationConfig& config);
// render_conversation + <|start|> + the next role (the prompt for sampling).
Pieces render_for_completion(const std::vector<Message>& messages, Role next_role,
                             const ConversationConfig& config);
// render_conversation, but a last assistant message on "final" ends in <|return|>.
Pieces render_for_training(const std::vector<Message>& messages, const ConversationConfig& config);

std::string pieces_text(const Pieces& pieces);
std::vector<uint32_t> pieces_tokens(const Tokenizer& tokenizer, const Pieces& pieces);

}  // namespace gptoss::harmony
