#pragma once
// Log-probabilities of sampled tokens in the shapes of the three endpoints.
#include <nlohmann/json.hpp>

#include <gptoss.h>

#include <string>
#include <vector>

#include "engine/generation.hpp"

namespace gptoss_server {

// The token's text (invalid UTF-8 bytes as U+FFFD) and its bytes.
std::string token_text(gptoss_tokenizer_t tokenizer, uint32_t token);
// Responses and Chat: {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}.
nlohmann::json token_logprob_json(gptoss_tokenizer_t tokenizer, const TokenLogprob& lp);
nlohmann::json token_logprobs_json(gptoss_tokenizer_t tokenizer, const std::vector<TokenLogprob>& lps);

}  // namespace gptoss_server
