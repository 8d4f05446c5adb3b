// Harmony streaming display. A "section" is one message's visible content; a new message
// or channel closes the previous section so reasoning never bleeds into the answer.
#include "completion.hpp"

#include <nlohmann/json.hpp>

namespace gptoss_cli {
namespace {
constexpr const char* kDim = "\033[2m";
constexpr const char* kCyan = "\033[36m";
constexpr const char* kReset = "\033[0m";

// The answer is the final channel. Commentary without a recipient is a preamble the model
// writes before its tool calls: like analysis, it is not the answer, so a script reading
// stdout must never take it for one.
bool is_answer_channel(const char* channel) {
  // Tolerant parsing may yield a message without a channel; it is still what the user sees.
  return channel == nullptr || std::string_view(channel) == "final";
}

bool is_commentary(const char* channel) {
  return channel != nullptr && std::string_view(channel) == "commentary";
}
}  // namespace

Completion::Completion(gptoss_tokenizer_t tokenizer, bool harmony, Display display)
    : tokenizer_(tokenizer), harmony_(harmony), display_(display) {
  if (harmony_) {
    parser_ = gptoss::harmony_parser::create(tokenizer, "assistant", /*strict=*/false);
  }
}

void Completion::write(std::string_view text) {
  if (!display_.out || text.empty()) return;
  std::fwrite(text.data(), 1, text.size(), display_.out);
  last_char_ = text.back();
}

void Completion::close_section() {
  if (section_ == Section::none) return;
  if (display_.color && section_ != Section::answer) write(kReset);
  if (section_ != Section::answer && last_char_ != '\n') write("\n");
  section_ = Section::none;
}

void Completion::show(Section section, const gptoss_harmony_state& state, std::string_view delta) {
  if (section == Section::reasoning && !display_.show_reasoning) return;
  if (section != section_ || state.num_messages != section_message_) {
    close_section();
    if (last_char_ != '\n') write("\n");
    section_ = section;
    section_message_ = state.num_messages;
    if (section == Section::reasoning) {
      write(display_.color ? kDim : is_commentary(state.channel) ? "[preamble] " : "[reasoning] ");
    } else if (section == Section::tool_call) {
      std::string label = std::string("[tool call -> ") + state.recipient;
      if (state.content_type) label += std::string(" ") + state.content_type;
      label += "] ";
      if (display_.color) write(kCyan);
      write(label);
    }
  }
  write(delta);
  if (section == Section::answer) streamed_answer_.append(delta);
}

void Completion::on_token(uint32_t token) {
  tokens_.push_back(token);
  if (!harmony_) {
    std::string_view bytes = gptoss::token_bytes(tokenizer_, token);
    raw_text_.append(bytes);
    write(bytes);
  } else {
    parser_.process_token(token);
    const gptoss_harmony_state state = parser_.current();
    if (state.content_delta_size > 0) {
      Section section = state.recipient && *state.recipient ? Section::tool_call
                        : is_answer_channel(state.channel) ? Section::answer
                                                           : Section::reasoning;
      show(section, state, std::string_view(state.content_delta, state.content_delta_size));
    }
  }
  if (display_.out) std::fflush(display_.out);
}

void Completion::finish() {
  if (finished_) return;
  finished_ = true;
  if (harmony_) {
    const char* json = nullptr;
    gptoss::check(gptoss_harmony_parser_finish(parser_.get(), &json),
                  "gptoss_harmony_parser_finish");
    messages_json_ = json ? json : "[]";
    // Ending the stream can complete a message whose text never came as a delta (a tolerant
    // parse of an unterminated header, say); show what the answer has beyond what streamed.
    std::string full = answer();
    if (full.size() > streamed_answer_.size() && full.compare(0, streamed_answer_.size(), streamed_answer_) == 0) {
      gptoss_harmony_state state{};
      state.num_messages = section_message_;
      show(Section::answer, state, std::string_view(full).substr(streamed_answer_.size()));
    }
  }
  close_section();
  if (last_char_ != '\n') write("\n");
  if (display_.out) std::fflush(display_.out);
}

std::string Completion::answer() const {
  if (!harmony_) return raw_text_;
  std::string answer;
  for (const auto& message : nlohmann::json::parse(messages_json_)) {
    if (message.value("role", "") != "assistant") continue;
    if (message.contains("recipient") && message["recipient"].is_string()) continue;
    const auto& channel = message.contains("channel") ? message["channel"] : nlohmann::json();
    if (!channel.is_null() && channel != "final") continue;
    const auto& content = message["content"];
    if (content.is_string()) {
      answer += content.get<std::string>();
    } else {
      for (const auto& part : content)
        if (part.value("type", "") == "text") answer += part.value("text", "");
    }
  }
  return answer;
}

}  // namespace gptoss_cli
