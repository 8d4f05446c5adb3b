#include "engine/output_tracker.hpp"

#include <nlohmann/json.hpp>

#include "engine/text_stream.hpp"

namespace gptoss_server {

bool is_answer(const MessageHeader& header) {
  return header.recipient.empty() && header.channel != "analysis";
}

namespace {

// Emits the text of the open message through the stop matcher (answer text only), with the
// log-probabilities of the tokens it came from.
class MessageEmitter {
 public:
  explicit MessageEmitter(std::vector<std::string> stop) : stop_(std::move(stop)) {}
  bool open() const { return open_; }
  bool stopped() const { return stop_.matched(); }
  const MessageHeader& header() const { return header_; }
  const std::string& text() const { return text_; }

  void begin(MessageHeader header, std::vector<OutputEvent>& out) {
    header_ = std::move(header);
    open_ = true;
    text_.clear();
    OutputEvent e;
    e.kind = OutputEvent::Kind::begin;
    e.header = header_;
    out.push_back(std::move(e));
  }
  void add_logprob(const TokenLogprob& lp) { logprobs_.push_back(lp); }
  void text(std::string_view delta, std::vector<OutputEvent>& out) {
    if (delta.empty() || stop_.matched()) return;
    text_.append(delta);
    emit(is_answer(header_) ? stop_.feed(delta) : std::string(delta), out);
  }
  void end(std::vector<OutputEvent>& out, bool complete = true) {
    if (is_answer(header_) && !stop_.matched()) emit(stop_.flush(), out);
    if (!logprobs_.empty()) emit_delta("", out);
    OutputEvent e;
    e.kind = OutputEvent::Kind::end;
    e.complete = complete;
    out.push_back(std::move(e));
    open_ = false;
  }

 private:
  void emit(std::string text, std::vector<OutputEvent>& out) {
    if (!text.empty()) emit_delta(std::move(text), out);
  }
  void emit_delta(std::string text, std::vector<OutputEvent>& out) {
    OutputEvent e;
    e.kind = OutputEvent::Kind::delta;
    e.text = std::move(text);
    e.logprobs = std::move(logprobs_);
    logprobs_.clear();
    out.push_back(std::move(e));
  }

  StopMatcher stop_;
  bool open_ = false;
  MessageHeader header_;
  std::string text_;  // all text of the open message fed so far
  std::vector<TokenLogprob> logprobs_;
};

class HarmonyTracker : public OutputTracker {
 public:
  HarmonyTracker(gptoss_tokenizer_t tokenizer, std::vector<std::string> stop) : emitter_(std::move(stop)) {
    parser_ = gptoss::harmony_parser::create(tokenizer, "assistant", /*strict=*/false);
  }

  void on_token(uint32_t token, const TokenLogprob* logprob, std::vector<OutputEvent>& out) override {
    if (emitter_.stopped()) return;
    const bool was_in_content = in_content_;
    parser_.process_token(token);
    ++message_tokens_;
    const gptoss_harmony_state st = parser_.current();
    const std::string delta(st.content_delta, st.content_delta_size);
    in_content_ = st.channel || st.recipient || st.content_type || !delta.empty();
    if (st.num_messages > completed_) {
      close_messages(nlohmann::json::parse(parser_.messages()), out);
    }
    if (!in_content_) {
      // Header tokens: their log-probabilities matter only if the parser recovers the header
      // as text (malformed output).
      if (logprob && !emitter_.stopped()) header_logprobs_.push_back(*logprob);
      return;
    }
    if (emitter_.stopped()) return;
    header_logprobs_.clear();
    if (!emitter_.open()) {
      MessageHeader h;
      if (st.role) h.role = st.role;
      if (st.channel) h.channel = st.channel;
      if (st.recipient) h.recipient = st.recipient;
      if (st.content_type) h.content_type = st.content_type;
      emitter_.begin(std::move(h), out);
    }
    if (logprob && (was_in_content || !delta.empty())) emitter_.add_logprob(*logprob);
    emitter_.text(delta, out);
    if (emitter_.stopped()) emitter_.end(out);
  }

  void finish(std::vector<OutputEvent>& out, bool cut) override {
    if (emitter_.stopped()) return;
    nlohmann::json messages = nlohmann::json::parse(parser_.finish());
    // The limit cut a header before its <|message|>: what the parser would recover from it is
    // header text ("to=functions.f", "<|channel|>fin"), not content, so it is dropped with its
    // log-probabilities. (A header that a stop token ends stays recovered as text: that is
    // malformed output, and its bytes are all the answer there is.)
    if (cut && !in_content_ && !emitter_.open() && messages.size() > completed_) {
      messages.erase(messages.begin() + std::ptrdiff_t(completed_), messages.end());
      header_logprobs_.clear();
    }
    // Whatever the end of the stream closes is the message the limit cut.
    close_messages(messages, out, !cut);
    if (emitter_.open()) emitter_.end(out, !cut);
    count_tokens(emitter_.header());
  }

  bool stopped() const override { return emitter_.stopped(); }
  size_t reasoning_tokens() const override { return reasoning_tokens_; }

 private:
  static MessageHeader header_of(const nlohmann::json& m) {
    MessageHeader h;
    auto field = [&](const char* key) { return m.contains(key) && m[key].is_string() ? m[key].get<std::string>() : ""; };
    if (!field("role").empty()) h.role = field("role");
    h.channel = field("channel");
    h.recipient = field("recipient");
    h.content_type = field("content_type");
    return h;
  }
  static std::string content_of(const nlohmann::json& m) {
    const auto& c = m["content"];
    if (c.is_string()) return c.get<std::string>();
    std::string text;
    for (const auto& part : c) text += part.value("text", "");
    return text;
  }
  // Reasoning is analysis without a recipient: a call written on the analysis channel is a
  // function_call item, not reasoning (as the library's reasoning budget counts it).
  void count_tokens(const MessageHeader& header) {
    if (header.channel == "analysis" && header.recipient.empty()) reasoning_tokens_ += message_tokens_;
    message_tokens_ = 0;
  }

  // Messages the parser completed since the last call: the open one gets the rest of its
  // text (bytes the parser decoded only at its end), any never opened is sent whole.
  void close_messages(const nlohmann::json& messages, std::vector<OutputEvent>& out, bool complete = true) {
    for (; completed_ < messages.size(); ++completed_) {
      const auto& m = messages[completed_];
      const std::string content = content_of(m);
      if (!emitter_.open()) {
        emitter_.begin(header_of(m), out);
        for (const auto& lp : header_logprobs_) emitter_.add_logprob(lp);
      }
      header_logprobs_.clear();
      const std::string& sent = emitter_.text();
      if (content.size() > sent.size() && content.compare(0, sent.size(), sent) == 0)
        emitter_.text(std::string_view(content).substr(sent.size()), out);
      count_tokens(emitter_.header());
      emitter_.end(out, complete);
      if (emitter_.stopped()) {
        completed_ = messages.size();
        return;
      }
    }
  }

  gptoss::harmony_parser parser_;
  MessageEmitter emitter_;
  size_t completed_ = 0;
  bool in_content_ = false;
  size_t message_tokens_ = 0;
  size_t reasoning_tokens_ = 0;
  std::vector<TokenLogprob> header_logprobs_;
};

class TextTracker : public OutputTracker {
 public:
  TextTracker(gptoss_tokenizer_t tokenizer, std::vector<std::string> stop)
      : tokenizer_(tokenizer), emitter_(std::move(stop)) {}

  void on_token(uint32_t token, const TokenLogprob* logprob, std::vector<OutputEvent>& out) override {
    if (emitter_.stopped()) return;
    if (!emitter_.open()) emitter_.begin({}, out);
    if (logprob) emitter_.add_logprob(*logprob);
    emitter_.text(utf8_.feed(gptoss::token_bytes(tokenizer_, token)), out);
    if (emitter_.stopped()) emitter_.end(out);
  }
  void finish(std::vector<OutputEvent>& out, bool cut) override {
    if (emitter_.stopped()) return;
    if (!emitter_.open()) emitter_.begin({}, out);
    emitter_.text(utf8_.flush(), out);
    emitter_.end(out, !cut);
  }
  bool stopped() const override { return emitter_.stopped(); }

 private:
  gptoss_tokenizer_t tokenizer_;
  Utf8Stream utf8_;
  MessageEmitter emitter_;
};

}  // namespace

std::unique_ptr<OutputTracker> make_harmony_tracker(gptoss_tokenizer_t tokenizer, std::vector<std::string> stop) {
  return std::make_unique<HarmonyTracker>(tokenizer, std::move(stop));
}

std::unique_ptr<OutputTracker> make_text_tracker(gptoss_tokenizer_t tokenizer, std::vector<std::string> stop) {
  return std::make_unique<TextTracker>(tokenizer, std::move(stop));
}

}  // namespace gptoss_server
