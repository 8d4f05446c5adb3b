#include "libgptoss/harmony/renderer.hpp"

#include "libgptoss/common/error.hpp"
#include "libgptoss/harmony/content_text.hpp"
#include "libgptoss/tokenizer/tokenizer.hpp"

namespace gptoss::harmony {
namespace {

constexpr std::string_view kConstrain = "<|constrain|>";

void text(Pieces& out, std::string s) { out.push_back(Piece{std::move(s), std::nullopt}); }
void token(Pieces& out, FormatToken t) { out.push_back(Piece{{}, t}); }

void append(Pieces& out, Pieces more) {
  for (auto& p : more) out.push_back(std::move(p));
}

}  // namespace

std::string_view format_token_string(FormatToken t) {
  switch (t) {
    case FormatToken::start: return "<|start|>";
    case FormatToken::message: return "<|message|>";
    case FormatToken::end: return "<|end|>";
    case FormatToken::return_: return "<|return|>";
    case FormatToken::call: return "<|call|>";
    case FormatToken::channel: return "<|channel|>";
    case FormatToken::constrain: return kConstrain;
  }
  return "";
}

bool conversation_has_function_tools(const std::vector<Message>& messages) {
  for (const Message& m : messages)
    for (const ContentPart& part : m.content)
      if (const auto* dev = std::get_if<DeveloperContent>(&part); dev != nullptr && dev->tools) {
        auto it = dev->tools->find("functions");
        if (it != dev->tools->end() && !it->second.tools.empty()) return true;
      }
  return false;
}

std::vector<const Message*> messages_to_render(const std::vector<Message>& messages,
                                               const ConversationConfig& config) {
  bool last_assistant_is_final = false;
  for (auto it = messages.rbegin(); it != messages.rend(); ++it)
    if (it->role == Role::assistant) {
      last_assistant_is_final = it->channel == "final";
      break;
    }
  size_t first_final = messages.size();
  for (size_t i = 0; i < messages.size(); ++i)
    if (messages[i].channel == "final") {
      first_final = i;
      break;
    }
  const bool drop = config.auto_drop_analysis && last_assistant_is_final;
  std::vector<const Message*> out;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (drop && i < first_final && messages[i].channel == "analysis") continue;
    out.push_back(&messages[i]);
  }
  return out;
}

Pieces render_message(const Message& m, const RenderOptions& options) {
  Pieces out;
  token(out, FormatToken::start);
  if (m.role == Role::tool) {
    // A tool's output is authored by the tool itself: its name replaces the role word.
    if (!m.name) fail(gptoss_status_invalid_argument, "a tool message needs the tool's name");
    text(out, *m.name);
  } else {
    text(out, std::string(role_name(m.role)));
    if (m.name) text(out, ":" + *m.name);
  }
  if (m.recipient && *m.recipient != "all") text(out, " to=" + *m.recipient);
  if (m.channel) {
    token(out, FormatToken::channel);
    text(out, *m.channel);
  }
  if (m.content_type) {
    std::string_view ct = *m.content_type;
    if (ct.substr(0, kConstrain.size()) == kConstrain) {
      text(out, " ");
      token(out, FormatToken::constrain);
      if (ct.size() > kConstrain.size()) text(out, std::string(ct.substr(kConstrain.size())));
    } else {
      text(out, " " + *m.content_type);
    }
  }
  token(out, FormatToken::message);
  for (const ContentPart& part : m.content) {
    if (const auto* t = std::get_if<TextContent>(&part)) {
      text(out, t->text);
    } else if (const auto* sys = std::get_if<SystemContent>(&part)) {
      if (m.role != Role::system)
        fail(gptoss_status_invalid_argument, "system content in a {} message", role_name(m.role));
      text(out, system_content_text(*sys, options.conversation_has_function_tools));
    } else {
      if (m.role != Role::developer)
        fail(gptoss_status_invalid_argument, "developer content in a {} message", role_name(m.role));
      text(out, developer_content_text(std::get<DeveloperContent>(part)));
    }
  }
  // An assistant message with a recipient is a tool call: the model stops there.
  token(out, m.role == Role::assistant && m.recipient ? FormatToken::call : FormatToken::end);
  return out;
}

Pieces render_conversation(const std::vector<Message>& messages, const ConversationConfig& config) {
  RenderOptions options{conversation_has_function_tools(messages)};
  Pieces out;
  for (const Message* m : messages_to_render(messages, config)) append(out, render_message(*m, options));
  return out;
}

Pieces render_for_completion(const std::vector<Message>& messages, Role next_role,
                             const ConversationConfig& config) {
  Pieces out = render_conversation(messages, config);
  token(out, FormatToken::start);
  text(out, std::string(role_name(next_role)));
  return out;
}

Pieces render_for_training(const std::vector<Message>& messages, const ConversationConfig& config) {
  Pieces out = render_conversation(messages, config);
  if (!messages.empty() && !out.empty()) {
    const Message& last = messages.back();
    if (last.role == Role::assistant && last.channel == "final") out.back() = Piece{{}, FormatToken::return_};
  }
  return out;
}

std::string pieces_text(const Pieces& pieces) {
  std::string out;
  for (const Piece& p : pieces) out += p.token ? std::string(format_token_string(*p.token)) : p.text;
  return out;
}

std::vector<uint32_t> pieces_tokens(const Tokenizer& tokenizer, const Pieces& pieces) {
  std::vector<uint32_t> out;
  for (const Piece& p : pieces) {
    if (p.token) {
      auto id = tokenizer.special_id(format_token_string(*p.token));
      if (!id) fail(gptoss_status_invalid_argument, "tokenizer lacks {}", format_token_string(*p.token));
      out.push_back(*id);
    } else if (!p.text.empty()) {
      auto ids = tokenizer.encode_ordinary(p.text);
      out.insert(out.end(), ids.begin(), ids.end());
    }
  }
  return out;
}

}  // namespace gptoss::harmony
