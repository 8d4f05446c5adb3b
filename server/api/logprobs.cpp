#include "api/logprobs.hpp"

#include <gptoss.hpp>
#include "engine/text_stream.hpp"

namespace gptoss_server {

std::string token_text(gptoss_tokenizer_t tokenizer, uint32_t token) {
  Utf8Stream utf8;
  std::string text = utf8.feed(gptoss::token_bytes(tokenizer, token));
  return text + utf8.flush();
}

std::string legacy_token_name(gptoss_tokenizer_t tokenizer, uint32_t token) {
  const std::string_view bytes = gptoss::token_bytes(tokenizer, token);
  std::string text = token_text(tokenizer, token);
  if (text == bytes) return text;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name = "bytes:";
  for (unsigned char b : bytes) name += {'\\', 'x', kHex[b >> 4], kHex[b & 15]};
  return name;
}

namespace {
nlohmann::json entry(gptoss_tokenizer_t tokenizer, uint32_t token, float logprob) {
  const std::string_view bytes = gptoss::token_bytes(tokenizer, token);
  nlohmann::json byte_values = nlohmann::json::array();
  for (unsigned char b : bytes) byte_values.push_back(int(b));
  return {{"token", token_text(tokenizer, token)}, {"logprob", logprob}, {"bytes", byte_values}};
}
}  // namespace

nlohmann::json token_logprob_json(gptoss_tokenizer_t tokenizer, const TokenLogprob& lp) {
  nlohmann::json j = entry(tokenizer, lp.token, lp.logprob);
  nlohmann::json top = nlohmann::json::array();
  for (const auto& [token, logprob] : lp.top) top.push_back(entry(tokenizer, token, logprob));
  j["top_logprobs"] = std::move(top);
  return j;
}

nlohmann::json token_logprobs_json(gptoss_tokenizer_t tokenizer, const std::vector<TokenLogprob>& lps) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& lp : lps) out.push_back(token_logprob_json(tokenizer, lp));
  return out;
}

}  // namespace gptoss_server
