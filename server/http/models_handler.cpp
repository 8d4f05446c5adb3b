// GET /v1/models and /v1/models/{id}: the one model this server serves.
#include "http/handlers.hpp"

namespace gptoss_server {

void list_models(ServerContext& ctx, const httplib::Request&, httplib::Response& res) {
  send_json(res, 200, {{"object", "list"}, {"data", nlohmann::json::array({ctx.model_object()})}});
}

void get_model(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  ctx.check_model(req.matches[1]);
  send_json(res, 200, ctx.model_object());
}

}  // namespace gptoss_server
