// GET /health and /healthz: 503 while the model loads and while draining, so a load balancer
// sends no new requests, and the determinism guarantee in force; GET /metrics: the Prometheus
// text of metrics.hpp.
#include "http/handlers.hpp"

namespace gptoss_server {
namespace {

// What a seeded request's answer depends on (docs/server.md, "Deterministic answers"). The
// scheduler, sampler, prefix cache and preemption add nothing that depends on other requests,
// so the backend's declaration (gptoss_model_info.batch_invariant) is the server's.
nlohmann::json determinism(const ServerContext& ctx, const Engine& engine) {
  return {{"batch_invariant", engine.batch_invariant},
          {"backend", engine.backend},
          {"kernels", engine.kernels},
          {"precision", ctx.options.exact ? "exact" : "fast"},
          {"kv_dtype", ctx.options.engine.kv_dtype == gptoss_kv_dtype_bf16 ? "bf16" : "f32"}};
}

}  // namespace

void health(ServerContext& ctx, const httplib::Request&, httplib::Response& res) {
  const double uptime =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx.started).count();
  if (!ctx.ready.load()) {
    send_json(
        res, 503,
        {{"status", "loading"}, {"model", ctx.options.model_name}, {"uptime_seconds", uptime}});
    return;
  }
  const bool draining = ctx.draining.load();
  send_json(res, draining ? 503 : 200,
            {{"status", draining ? "draining" : "ok"},
             {"model", ctx.options.model_name},
             {"backend", ctx.engine().backend},
             {"determinism", determinism(ctx, ctx.engine())},
             {"uptime_seconds", uptime}});
}

void metrics_text(ServerContext& ctx, const httplib::Request&, httplib::Response& res) {
  res.set_content(
      ctx.metrics.prometheus(ctx.ready.load() ? ctx.engine().scheduler->gauges() : EngineGauges{}),
      "text/plain; version=0.0.4");
}

}  // namespace gptoss_server
