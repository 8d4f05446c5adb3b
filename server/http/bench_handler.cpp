// GET /bench?n=8&max_new_tokens=64: n generations of a fixed prompt run together through the
// scheduler, each exactly max_new_tokens long; aggregate and per-stream tokens per second.
// Off unless --enable-bench (it occupies the engine while it runs).
#include <chrono>

#include "api/api_error.hpp"
#include "api/json_reader.hpp"
#include "http/handlers.hpp"
#include "http/streaming.hpp"

namespace gptoss_server {

using nlohmann::json;

void bench(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  if (!ctx.options.enable_bench)
    throw not_found("GET /bench is disabled: start the server with --enable-bench.", {}, "unknown_url");
  json query = json::object();
  for (const char* key : {"n", "max_new_tokens"})
    if (req.has_param(key)) {
      const std::string v = req.get_param_value(key);
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      query[key] = !v.empty() && *end == '\0' ? json(n) : json(v);
    }
  const JsonReader q(query, "");
  const size_t n = size_t(q.integer("n", 1, 256).value_or(8));
  const size_t max_new = size_t(q.integer("max_new_tokens", 1, 4096).value_or(64));
  ctx.check_generations(n, "n");

  const std::string prompt_text =
      "The history of computing is a story of machines that grew smaller and faster while the problems "
      "they were asked to solve grew larger. Tell it from the beginning.";
  GenerationSpec spec;
  spec.prompt = gptoss::encode(ctx.engine().tokenizer.get(), prompt_text);
  spec.max_tokens = std::min(max_new, ctx.options.engine.context_length - spec.prompt.size());
  spec.harmony = false;
  spec.ignore_stop_tokens = true;
  spec.sampling.seed = 0;

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  // Whatever ends this request (an answer, an error, a client gone), its jobs stop with it.
  struct Jobs : std::vector<std::shared_ptr<Job>> {
    ~Jobs() {
      for (auto& job : *this) job->cancel();
    }
  } jobs;
  for (size_t i = 0; i < n; ++i) jobs.push_back(ctx.engine().scheduler->submit(spec));
  std::vector<Clock::time_point> first(n), last(n);
  std::vector<size_t> tokens(n, 0);
  std::vector<bool> seen(n, false);
  std::string error;
  const ClientConnection client = current_client();
  const bool connected = follow_jobs(
      jobs, client,
      [&](size_t i, std::vector<OutputEvent>&) {
        const auto now = Clock::now();
        if (!seen[i]) first[i] = now;
        seen[i] = true;
        last[i] = now;
        return true;
      },
      [&](size_t i, const Finish& f) {
        tokens[i] = f.usage.output_tokens;
        last[i] = Clock::now();
        if (!seen[i]) first[i] = last[i];
        if (f.reason == FinishReason::error) error = f.error;
        return true;
      });
  if (!connected) return;
  if (!error.empty()) throw server_error("A bench generation failed: " + error);
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  json streams = json::array();
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    const double ttft = std::chrono::duration<double>(first[i] - start).count();
    const double decode = std::chrono::duration<double>(last[i] - first[i]).count();
    streams.push_back({{"tokens", tokens[i]},
                       {"time_to_first_token_seconds", ttft},
                       {"tokens_per_second", decode > 0 && tokens[i] > 1 ? double(tokens[i] - 1) / decode : 0.0}});
    total += tokens[i];
  }
  send_json(res, 200,
            {{"n", n},
             {"max_new_tokens", max_new},
             {"prompt_tokens", spec.prompt.size()},
             {"wall_seconds", wall},
             {"output_tokens", total},
             {"aggregate_tokens_per_second", wall > 0 ? double(total) / wall : 0.0},
             {"streams", streams}});
}

}  // namespace gptoss_server
