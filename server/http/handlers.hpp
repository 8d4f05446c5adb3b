#pragma once
// The handlers of gptoss-server's endpoints, one unit each, over the shared ServerContext.
// App (http/app.hpp) routes to them, after authentication, and turns what they throw
// (ApiError, a full queue, a drain, a store failure) into OpenAI-shaped errors.
#include <httplib.h>

#include "http/server_context.hpp"

namespace gptoss_server {

// health_handler.cpp: GET /health, /healthz (no model needed) and /metrics (Prometheus text).
void health(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void metrics_text(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

// models_handler.cpp: GET /v1/models and /v1/models/{id}.
void list_models(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void get_model(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

// responses_handler.cpp: POST /v1/responses (plain or streamed), GET and DELETE
// /v1/responses/{id}, GET /v1/responses/{id}/input_items.
void create_response(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void get_response(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void delete_response(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void list_input_items(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

// chat_completions_handler.cpp: POST /v1/chat/completions.
void chat_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

// completions_handler.cpp: POST /v1/completions.
void completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

// bench_handler.cpp: GET /bench (only with --enable-bench).
void bench(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

}  // namespace gptoss_server
