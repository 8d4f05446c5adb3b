// The HTTP layer before a model is loaded: health checks answer 503, the API answers 503 in
// OpenAI's error shape, authentication and unknown routes.
#include <catch2/catch.hpp>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "http/app.hpp"

using namespace gptoss_server;
using nlohmann::json;

namespace {

struct LoadingServer {
  ServerOptions options;
  std::unique_ptr<App> app;
  httplib::Server server;
  std::thread thread;
  int port = 0;
  std::string store_path = (std::filesystem::temp_directory_path() /
                            ("gptoss-http-test-" + std::to_string(getpid()) + ".sqlite3")).string();

  explicit LoadingServer(std::string api_key = {}) {
    spdlog::set_level(spdlog::level::warn);  // no access log in test output
    options.model_path = "unused";
    options.model_name = "m";
    options.api_key = std::move(api_key);
    app = std::make_unique<App>(options, open_response_store(store_path));
    app->register_routes(server);
    port = server.bind_to_any_port("127.0.0.1");
    REQUIRE(port > 0);
    thread = std::thread([this] { server.listen_after_bind(); });
  }
  ~LoadingServer() {
    server.stop();
    thread.join();
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(store_path + suffix, ec);
  }
  httplib::Client client() const { return httplib::Client("127.0.0.1", port); }
};

json error_of(const httplib::Result& r) {
  REQUIRE(r);
  const json body = json::parse(r->body);
  REQUIRE(body.contains("error"));
  CHECK(body["error"].contains("message"));
  CHECK(body["error"].contains("type"));
  CHECK(body["error"].contains("param"));
  CHECK(body["error"].contains("code"));
  return body["error"];
}

}  // namespace

TEST_CASE("while the model loads: health 503, API 503 in the OpenAI shape", "[server][http]") {
  LoadingServer s;
  auto c = s.client();
  auto health = c.Get("/health");
  REQUIRE(health);
  CHECK(health->status == 503);
  CHECK(json::parse(health->body)["status"] == "loading");
  CHECK(c.Get("/healthz")->status == 503);
  auto models = c.Get("/v1/models");
  CHECK(models->status == 503);
  CHECK(error_of(models)["code"] == "model_loading");
  auto post = c.Post("/v1/responses", R"({"model": "m", "input": "hi"})", "application/json");
  CHECK(post->status == 503);
  CHECK(c.Get("/metrics")->status == 200);
  auto unknown = c.Get("/v2/everything");
  CHECK(unknown->status == 404);
  CHECK(error_of(unknown)["code"] == "unknown_url");
  CHECK_FALSE(unknown->get_header_value("x-request-id").empty());
}

TEST_CASE("an API key (--api-key) is a Bearer token on everything but health checks", "[server][http]") {
  LoadingServer s("sekret");
  auto c = s.client();
  auto none = c.Get("/v1/models");
  CHECK(none->status == 401);
  CHECK(error_of(none)["code"] == "invalid_api_key");
  httplib::Headers wrong = {{"Authorization", "Bearer sekreT"}};
  CHECK(c.Get("/v1/models", wrong)->status == 401);
  httplib::Headers basic = {{"Authorization", "Basic sekret"}};
  CHECK(c.Get("/v1/models", basic)->status == 401);
  httplib::Headers right = {{"Authorization", "Bearer sekret"}};
  CHECK(c.Get("/v1/models", right)->status == 503);  // authenticated; still loading
  CHECK(c.Get("/health")->status == 503);
}
