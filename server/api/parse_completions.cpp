// POST /v1/completions: raw text or token-id prompts, no Harmony.
#include "api/api_error.hpp"
#include "api/parse_common.hpp"

namespace gptoss_server {
namespace {

std::vector<uint32_t> token_ids(const json& array, const std::string& path) {
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < array.size(); ++i) {
    const json& v = array[i];
    if (!v.is_number_integer() && !v.is_number_unsigned())
      throw_wrong_type(element_path(path, i), "a token id (an integer)", v);
    if (v.is_number_integer() && v.get<int64_t>() < 0)
      throw invalid_request("Invalid token id " + v.dump() + " at '" + element_path(path, i) + "'.",
                            element_path(path, i), "invalid_value");
    if (v.get<uint64_t>() > UINT32_MAX)
      throw invalid_request("Invalid token id " + v.dump() + " at '" + element_path(path, i) + "'.",
                            element_path(path, i), "invalid_value");
    ids.push_back(v.get<uint32_t>());
  }
  return ids;
}

bool is_token_array(const json& v) {
  return v.is_array() && !v.empty() && (v[0].is_number_integer() || v[0].is_number_unsigned());
}

// A string, an array of strings, an array of token ids, or an array of such arrays.
std::vector<CompletionPrompt> parse_prompts(const JsonReader& body) {
  const json* prompt = body.find("prompt");
  if (!prompt)
    throw invalid_request("Missing required parameter: 'prompt'.", "prompt", "missing_required_parameter");
  std::vector<CompletionPrompt> out;
  if (prompt->is_string()) {
    out.push_back({prompt->get<std::string>(), {}});
  } else if (is_token_array(*prompt)) {
    out.push_back({std::nullopt, token_ids(*prompt, "prompt")});
  } else if (prompt->is_array()) {
    for (size_t i = 0; i < prompt->size(); ++i) {
      const json& p = (*prompt)[i];
      if (p.is_string()) out.push_back({p.get<std::string>(), {}});
      else if (is_token_array(p)) out.push_back({std::nullopt, token_ids(p, element_path("prompt", i))});
      else throw_wrong_type(element_path("prompt", i), "a string or an array of token ids", p);
    }
    if (out.empty())
      throw invalid_request("Invalid 'prompt': the array is empty.", "prompt", "invalid_value");
  } else {
    throw_wrong_type("prompt", "a string, an array of strings or an array of token ids", *prompt);
  }
  return out;
}

}  // namespace

CompletionsRequest parse_completions_request(std::string_view text) {
  const json body_json = parse_body(text);
  const JsonReader body(body_json, "");
  CompletionsRequest r;
  r.model = body.required_string("model");
  r.prompts = parse_prompts(body);
  r.options.sampling = parse_sampling(body);
  r.options.max_tokens = body.integer("max_tokens", 0, INT32_MAX).value_or(16);
  r.options.stop = parse_stop(body);
  if (auto logprobs = body.integer("logprobs", 0, 20)) r.options.sampling.logprobs = int(*logprobs);
  r.n = int(body.integer("n", 1, 16).value_or(1));
  if (auto best_of = body.integer("best_of", 1, 16); best_of && *best_of != r.n)
    throw invalid_request("Unsupported value for 'best_of': only best_of = n is supported.", "best_of",
                          "unsupported_value");
  if (auto suffix = body.string("suffix"); suffix && !suffix->empty())
    throw invalid_request("Unsupported parameter: 'suffix' (gpt-oss has no fill-in-the-middle mode).",
                          "suffix", "unsupported_value");
  r.echo = body.boolean("echo").value_or(false);
  if (r.echo && r.options.sampling.logprobs >= 0)
    throw invalid_request("Unsupported combination: 'echo' with 'logprobs' (prompt log-probabilities are "
                          "not computed).", "logprobs", "unsupported_value");
  r.stream = parse_stream(body, &r.include_usage);
  return r;
}

}  // namespace gptoss_server
