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
// The token as the legacy Completions API names it (its `tokens` and the keys of its
// `top_logprobs`): the text when the token's bytes are whole UTF-8 characters, else
// "bytes:\\xe4\\xb8" as OpenAI's endpoint writes them. Distinct tokens get distinct names, so
// no alternative is lost as a duplicate key when two partial characters are among the top.
std::string legacy_token_name(gptoss_tokenizer_t tokenizer, uint32_t token);
// Responses and Chat: {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}.
nlohmann::json token_logprob_json(gptoss_tokenizer_t tokenizer, const TokenLogprob& lp);
nlohmann::json token_logprobs_json(gptoss_tokenizer_t tokenizer, const std::vector<TokenLogprob>& lps);

}  // namespace gptoss_server
