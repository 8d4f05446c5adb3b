// POST /v1/chat/completions: a Harmony chat, n choices (one job each), plain or streamed as
// `data:` chunks ending with [DONE] (http/choices.hpp).
#include <spdlog/spdlog.h>

#include <ctime>

#include "api/ids.hpp"
#include "http/choices.hpp"
#include "http/handlers.hpp"

namespace gptoss_server {

using nlohmann::json;

void chat_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  ChatRequest r = parse_chat_request(req.body);
  ctx.check_model(r.model);
  ctx.check_generations(size_t(r.n), "n");
  for (const auto& type : r.setup.skipped_tools)
    spdlog::warn(
        "/v1/chat/completions: a '{}' tool is not offered to the model (only function tools are)",
        type);
  const GenerationSpec spec =
      ctx.harmony_spec(r.setup, r.messages, r.options, "messages", "response_format");

  auto run = std::make_shared<choices::ChoicesRun<ChatChoice>>(
      current_client(),
      json{{"id", new_id("chatcmpl-", 32)},
           {"created", int64_t(std::time(nullptr))},
           {"model", ctx.options.model_name},
           {"system_fingerprint", nullptr}},
      r.include_usage);
  for (int i = 0; i < r.n; ++i) {
    run->jobs.push_back(choices::submit_or_cancel(*ctx.engine().scheduler,
                                                  choices::choice_spec(spec, i), run->jobs));
    run->choices.emplace_back(ctx.engine().tokenizer.get(), i, r.options.sampling.logprobs >= 0);
    run->owns_prompt.push_back(i == 0);
  }
  run->finishes.resize(run->jobs.size());
  choices::respond(run, res, r.stream, "chat.completion", "chat.completion.chunk",
                   ctx.hold_active());
}

}  // namespace gptoss_server
