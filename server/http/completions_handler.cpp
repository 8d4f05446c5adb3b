// POST /v1/completions: raw text (or token ids) continued without Harmony, n choices per
// prompt (one job each), plain or streamed as `data:` chunks ending with [DONE]
// (http/choices.hpp).
#include <ctime>

#include "api/ids.hpp"
#include "engine/text_stream.hpp"
#include "http/choices.hpp"
#include "http/handlers.hpp"

namespace gptoss_server {

using nlohmann::json;

namespace {

std::string decode_text(gptoss_tokenizer_t tokenizer, const std::vector<uint32_t>& tokens) {
  Utf8Stream utf8;
  std::string text;
  for (uint32_t t : tokens) text += utf8.feed(gptoss::token_bytes(tokenizer, t));
  return text + utf8.flush();
}

}  // namespace

void completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  CompletionsRequest r = parse_completions_request(req.body);
  ctx.check_model(r.model);
  ctx.check_generations(r.prompts.size() * size_t(r.n), "n");
  gptoss_tokenizer_t tokenizer = ctx.engine().tokenizer.get();
  auto run = std::make_shared<choices::ChoicesRun<CompletionChoice>>(
      current_client(),
      json{{"id", new_id("cmpl-", 32)},
           {"created", int64_t(std::time(nullptr))},
           {"model", ctx.options.model_name}},
      r.include_usage);
  for (size_t p = 0; p < r.prompts.size(); ++p) {
    const CompletionPrompt& prompt = r.prompts[p];
    const std::string param =
        r.prompts.size() == 1 ? "prompt" : "prompt[" + std::to_string(p) + "]";
    // Raw text: special-token strings (<|start|>...) are the tokens, so a hand-written Harmony
    // prompt works.
    std::vector<uint32_t> tokens =
        prompt.text ? gptoss::encode(tokenizer, *prompt.text, GPTOSS_ENCODE_ALLOW_SPECIAL)
                    : prompt.tokens;
    for (uint32_t t : tokens)
      if (t >= ctx.engine().vocab_size)
        throw invalid_request("Invalid token id " + std::to_string(t) + " in '" + param +
                                  "': the vocabulary has " +
                                  std::to_string(ctx.engine().vocab_size) + " tokens.",
                              param, "invalid_value");
    if (tokens.empty())
      throw invalid_request("The prompt '" + param + "' is empty.", param, "invalid_value");
    if (tokens.size() >= ctx.options.engine.context_length)
      throw invalid_request("This model's maximum context length is " +
                                std::to_string(ctx.options.engine.context_length) +
                                " tokens. However, your prompt has " +
                                std::to_string(tokens.size()) + " tokens.",
                            param, "context_length_exceeded");
    const std::string echo =
        r.echo ? (prompt.text ? *prompt.text : decode_text(tokenizer, tokens)) : "";
    GenerationSpec spec;
    spec.prompt = std::move(tokens);
    spec.sampling = r.options.sampling;
    spec.max_tokens = ctx.output_budget(spec.prompt.size(), r.options.max_tokens);
    spec.harmony = false;
    spec.stop = r.options.stop;
    for (int j = 0; j < r.n; ++j) {
      run->jobs.push_back(choices::submit_or_cancel(*ctx.engine().scheduler,
                                                    choices::choice_spec(spec, j), run->jobs));
      run->choices.emplace_back(tokenizer, int(run->choices.size()), r.options.sampling.logprobs,
                                echo);
      run->owns_prompt.push_back(j == 0);
    }
  }
  run->finishes.resize(run->jobs.size());
  choices::respond(run, res, r.stream, "text_completion", "text_completion", ctx.hold_active());
}

}  // namespace gptoss_server
