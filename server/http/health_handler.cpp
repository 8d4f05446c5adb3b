// GET /health and /healthz: 503 while the model loads and while draining, so a load balancer
// sends no new requests; GET /metrics: the Prometheus text of metrics.hpp.
#include "http/handlers.hpp"

namespace gptoss_server {

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
             {"uptime_seconds", uptime}});
}

void metrics_text(ServerContext& ctx, const httplib::Request&, httplib::Response& res) {
  res.set_content(
      ctx.metrics.prometheus(ctx.ready.load() ? ctx.engine().scheduler->gauges() : EngineGauges{}),
      "text/plain; version=0.0.4");
}

}  // namespace gptoss_server
