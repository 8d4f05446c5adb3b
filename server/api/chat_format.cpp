#include "api/chat_format.hpp"

#include <gptoss.hpp>
#include "api/ids.hpp"
#include "api/logprobs.hpp"

namespace gptoss_server {

const char* finish_reason_name(FinishReason reason) {
  return reason == FinishReason::length ? "length" : "stop";
}

json speculative_usage(const Usage& u) {
  return {{"drafted_tokens", u.drafted_tokens}, {"accepted_tokens", u.accepted_tokens}};
}

json chat_usage(const Usage& u) {
  json usage = {{"prompt_tokens", u.prompt_tokens},
                {"completion_tokens", u.output_tokens},
                {"total_tokens", u.prompt_tokens + u.output_tokens},
                {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}},
                {"completion_tokens_details", {{"reasoning_tokens", u.reasoning_tokens}}}};
  if (u.speculative) usage["speculative"] = speculative_usage(u);  // extension (docs/server.md)
  return usage;
}

ChatChoice::ChatChoice(gptoss_tokenizer_t tokenizer, int index, bool logprobs)
    : tokenizer_(tokenizer), index_(index), logprobs_(logprobs) {}

json ChatChoice::entry(json delta, json logprobs) const {
  return {{"index", index_}, {"delta", std::move(delta)}, {"logprobs", std::move(logprobs)}, {"finish_reason", nullptr}};
}

std::vector<json> ChatChoice::on_events(const std::vector<OutputEvent>& events) {
  std::vector<json> out;
  if (!started_) {
    started_ = true;
    out.push_back(entry({{"role", "assistant"}, {"content", ""}}));
  }
  for (const auto& e : events) {
    if (e.kind == OutputEvent::Kind::begin) {
      std::string name;
      kind_ = output_kind(e.header, &name);
      if (kind_ != OutputKind::function_call) continue;
      json call = {{"id", new_id("call_", 24)}, {"type", "function"}, {"function", {{"name", name}, {"arguments", ""}}}};
      json streamed = call;
      streamed["index"] = tool_calls_.size();
      tool_calls_.push_back(std::move(call));
      out.push_back(entry({{"tool_calls", json::array({streamed})}}));
    } else if (e.kind == OutputEvent::Kind::delta) {
      switch (kind_) {
        case OutputKind::function_call: {
          json& args = tool_calls_.back()["function"]["arguments"];
          args = args.get<std::string>() + e.text;
          const json piece = {{"index", tool_calls_.size() - 1}, {"function", {{"arguments", e.text}}}};
          out.push_back(entry({{"tool_calls", json::array({piece})}}));
          break;
        }
        case OutputKind::reasoning:
          reasoning_ += e.text;
          out.push_back(entry({{"reasoning_content", e.text}}));
          break;
        case OutputKind::message: {
          content_ += e.text;
          json lps = nullptr;
          if (logprobs_) {
            json list = token_logprobs_json(tokenizer_, e.logprobs);
            for (const auto& lp : list) content_logprobs_.push_back(lp);
            lps = {{"content", std::move(list)}, {"refusal", nullptr}};
          }
          out.push_back(entry({{"content", e.text}}, std::move(lps)));
          break;
        }
      }
    }
  }
  return out;
}

const char* ChatChoice::finish_reason(const Finish& finish) const {
  if (finish.reason == FinishReason::stop && !tool_calls_.empty()) return "tool_calls";
  return finish_reason_name(finish.reason);
}

json ChatChoice::finish_entry(const Finish& finish) const {
  json e = entry(json::object());
  e["finish_reason"] = finish_reason(finish);
  e["closed_by_budget"] = finish.closed_by_budget;  // extension (docs/server.md)
  return e;
}

json ChatChoice::choice(const Finish& finish) const {
  json message = {{"role", "assistant"},
                  {"content", content_.empty() ? json(nullptr) : json(content_)},
                  {"refusal", nullptr}};
  if (!reasoning_.empty()) message["reasoning_content"] = reasoning_;
  if (!tool_calls_.empty()) message["tool_calls"] = tool_calls_;
  json lps = logprobs_ ? json{{"content", content_logprobs_}, {"refusal", nullptr}} : json(nullptr);
  return {{"index", index_}, {"message", std::move(message)}, {"logprobs", std::move(lps)},
          {"finish_reason", finish_reason(finish)}, {"closed_by_budget", finish.closed_by_budget}};
}

CompletionChoice::CompletionChoice(gptoss_tokenizer_t tokenizer, int index, int logprobs, std::string echo)
    : tokenizer_(tokenizer), index_(index), logprobs_(logprobs), echo_(std::move(echo)) {
  if (logprobs_ >= 0)
    all_logprobs_ = {{"tokens", json::array()}, {"token_logprobs", json::array()},
                     {"top_logprobs", json::array()}, {"text_offset", json::array()}};
}

json CompletionChoice::entry(std::string text, json logprobs) const {
  return {{"index", index_}, {"text", std::move(text)}, {"logprobs", std::move(logprobs)}, {"finish_reason", nullptr}};
}

namespace {
// Characters (code points) in UTF-8 bytes: the bytes that are not continuation bytes, so a
// token that ends inside a character counts that character where it begins.
size_t utf8_chars(std::string_view bytes) {
  size_t n = 0;
  for (unsigned char c : bytes) n += (c & 0xC0) != 0x80;
  return n;
}
}  // namespace

// text_offset counts characters of the choice's text, as the legacy API (and vLLM) do: byte
// offsets would point inside non-ASCII text.
json CompletionChoice::logprobs_of(const std::vector<TokenLogprob>& lps, size_t offset) const {
  json out = {{"tokens", json::array()}, {"token_logprobs", json::array()},
              {"top_logprobs", json::array()}, {"text_offset", json::array()}};
  for (const auto& lp : lps) {
    json top = json::object();
    for (const auto& [token, logprob] : lp.top) top[legacy_token_name(tokenizer_, token)] = logprob;
    out["tokens"].push_back(legacy_token_name(tokenizer_, lp.token));
    out["token_logprobs"].push_back(lp.logprob);
    out["top_logprobs"].push_back(std::move(top));
    out["text_offset"].push_back(offset);
    offset += utf8_chars(gptoss::token_bytes(tokenizer_, lp.token));
  }
  return out;
}

std::vector<json> CompletionChoice::on_events(const std::vector<OutputEvent>& events) {
  std::vector<json> out;
  if (!echo_sent_) {
    echo_sent_ = true;
    text_ = echo_;
    if (!echo_.empty()) out.push_back(entry(echo_, nullptr));
  }
  for (const auto& e : events) {
    if (e.kind != OutputEvent::Kind::delta) continue;
    json lps = nullptr;
    if (logprobs_ >= 0) {
      lps = logprobs_of(e.logprobs, utf8_chars(text_));
      for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"})
        for (const auto& v : lps[key]) all_logprobs_[key].push_back(v);
    }
    text_ += e.text;
    out.push_back(entry(e.text, std::move(lps)));
  }
  return out;
}

json CompletionChoice::finish_entry(const Finish& finish) const {
  json e = entry("", nullptr);
  e["finish_reason"] = finish_reason_name(finish.reason);
  return e;
}

json CompletionChoice::choice(const Finish& finish) const {
  return {{"index", index_}, {"text", echo_sent_ ? text_ : echo_}, {"logprobs", logprobs_ >= 0 ? all_logprobs_ : json(nullptr)},
          {"finish_reason", finish_reason_name(finish.reason)}};
}

}  // namespace gptoss_server
