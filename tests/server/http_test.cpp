// The HTTP layer before a model is loaded: health checks answer 503, the API answers 503 in
// OpenAI's error shape, authentication and unknown routes. Then, with one layer of the
// conformance model loaded: the token limit of structured output (the 400 below its minimum,
// closed_by_budget).
#include <catch2/catch.hpp>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include "http/app.hpp"
#include "http/http_server.hpp"
#include "support/c_api.hpp"
#include "support/loopback.hpp"

using namespace gptoss_server;
using gptoss::test::connect_loopback;
using nlohmann::json;

namespace {

struct LoadingServer {
  ServerOptions options;
  std::unique_ptr<App> app;
  HttpServer server{{options.read_timeout_s, options.write_timeout_s, options.keep_alive_timeout_s,
                     options.header_timeout_s}};
  std::thread thread;
  int port = 0;
  std::string store_path = (std::filesystem::temp_directory_path() /
                            ("gptoss-http-test-" + std::to_string(getpid()) + ".sqlite3")).string();

  explicit LoadingServer(std::string api_key = {}, size_t max_body_bytes = 16u << 20,
                         std::unique_ptr<ResponseStore> store = nullptr) {
    spdlog::set_level(spdlog::level::warn);  // no access log in test output
    options.model_path = "unused";
    options.model_name = "m";
    options.api_key = std::move(api_key);
    options.max_body_bytes = max_body_bytes;
    app =
        std::make_unique<App>(options, store ? std::move(store) : open_response_store(store_path));
    app->register_routes(server);
    port = server.bind("127.0.0.1", 0);
    REQUIRE(port > 0);
    thread = std::thread([this] { server.listen_after_bind(); });
  }
  ~LoadingServer() {
    server.stop_serving();
    thread.join();
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(store_path + suffix, ec);
  }
  httplib::Client client() const { return httplib::Client("127.0.0.1", port); }

  // Loads one layer of the conformance model (scalar kernels: the same tokens on any machine).
  void load_model() {
    setenv("GPTOSS_CPU_ISA", "scalar", 1);  // read when the model opens its device
    options.engine.max_running = 4;
    options.engine.step_tokens = 64;
    options.engine.context_length = 1024;
    options.engine.kv_tokens = 4096;
    options.engine.prefix_cache_entries = 0;
    auto engine = std::make_unique<Engine>();
    engine->model.reset(gptoss::test::load_conformance_model(gptoss::test::Format::hf, 1, gptoss_precision_exact).release());
    gptoss_tokenizer_t tokenizer = nullptr;
    gptoss::check(gptoss_model_get_tokenizer(engine->model.get(), &tokenizer),
                  "gptoss_model_get_tokenizer");
    engine->tokenizer.reset(tokenizer);
    engine->vocab_size = 201088;
    const gptoss_model_info info = engine->model.info();  // as gptoss-server's main fills it
    engine->backend = info.backend;
    engine->batch_invariant = info.batch_invariant != 0;
    engine->kernels = info.kernels;
    engine->grammars = std::make_unique<GrammarCache>(tokenizer, 8);
    engine->scheduler = std::make_unique<Scheduler>(engine->model.get(), options.engine, app->metrics());
    app->set_engine(std::move(engine));
  }
};

// An SQLite store that can be taken down (as PostgreSQL stopped, a disk full): every call
// throws StoreError while `down` holds.
class OutageStore : public ResponseStore {
 public:
  OutageStore(std::unique_ptr<ResponseStore> inner, std::shared_ptr<std::atomic<bool>> down)
      : inner_(std::move(inner)), down_(std::move(down)) {}
  void put(const StoredResponse& r) override { check(), inner_->put(r); }
  std::optional<StoredResponse> get(const std::string& id) override {
    return check(), inner_->get(id);
  }
  bool remove(const std::string& id) override { return check(), inner_->remove(id); }
  std::string describe() const override { return inner_->describe(); }
  int schema_version() override { return inner_->schema_version(); }
  void ping() override { check(); }

 private:
  void check() const {
    if (down_->load()) throw StoreError("cannot connect to the store (test outage)");
  }
  std::unique_ptr<ResponseStore> inner_;
  std::shared_ptr<std::atomic<bool>> down_;
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

// Sends `data`; everything the server answers until it closes the connection (10 s at most).
std::string answer_until_close(int port, const std::string& data) {
  const int fd = connect_loopback(port);
  const timeval limit{10, 0};
  REQUIRE(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit) == 0);
  REQUIRE(send(fd, data.data(), data.size(), 0) == ssize_t(data.size()));
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) answer.append(buf, size_t(n));
  close(fd);
  return answer;
}

// Sends `head` (and nothing more) on a fresh connection; the status line of the answer and how
// long it took.
std::pair<std::string, double> raw_request(int port, const std::string& head) {
  const int fd = connect_loopback(port);
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(send(fd, head.data(), head.size(), 0) == ssize_t(head.size()));
  std::string answer;
  char buf[4096];
  while (answer.find("\r\n") == std::string::npos) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    answer.append(buf, size_t(n));
  }
  close(fd);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {answer.substr(0, answer.find("\r\n")), seconds};
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

TEST_CASE("request bodies: the size limit holds for every encoding", "[server][http]") {
  LoadingServer s({}, 4096);
  auto c = s.client();
  const std::string small = R"({"model": "m", "input": "hi"})";
  // A chunked body (no Content-Length) past the limit.
  const std::string big(10000, ' ');
  auto chunked = c.Post("/v1/responses",
                        [&](size_t offset, httplib::DataSink& sink) {
                          if (offset < big.size()) sink.write(big.data() + offset, std::min<size_t>(1000, big.size() - offset));
                          else sink.done();
                          return true;
                        },
                        "application/json");
  // The server may close before the client has sent it all; when an answer came, it is 413.
  if (chunked) {
    CHECK(chunked->status == 413);
    CHECK(error_of(chunked)["code"] == "request_too_large");
  }
  // A small chunked body reaches the endpoint (503: the model is loading).
  auto fine = c.Post("/v1/responses",
                     [&](size_t offset, httplib::DataSink& sink) {
                       if (offset < small.size()) sink.write(small.data() + offset, small.size() - offset);
                       else sink.done();
                       return true;
                     },
                     "application/json");
  REQUIRE(fine);
  CHECK(fine->status == 503);
  // A Content-Length past the limit is refused before the body: no waiting for bytes that the
  // client never sends (the read timeout is 5 s).
  const std::string post = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
  auto [status, seconds] = raw_request(s.port, post + "Content-Length: 5000\r\n\r\n");
  CHECK(status == "HTTP/1.1 413 Payload Too Large");
  CHECK(seconds < 2.0);
  std::tie(status, seconds) = raw_request(s.port, post + "Content-Length: -5\r\n\r\n");
  CHECK(status == "HTTP/1.1 400 Bad Request");
  CHECK(seconds < 2.0);
  // No Content-Length and no chunks: no body, answered at once.
  std::tie(status, seconds) = raw_request(s.port, post + "\r\n");
  CHECK(status == "HTTP/1.1 503 Service Unavailable");
  CHECK(seconds < 2.0);
}

TEST_CASE("a request whose headers or body cannot be read is answered 400 and ends its connection",
          "[server][http]") {
  LoadingServer s;
  // Where such a request ends is unknown, so the bytes after it (a second request here) must
  // not be served as one.
  const std::string next = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::pair<std::string, std::string> cases[] = {
      // A header line past cpp-httplib's 8 KiB: refused after the request line was parsed.
      {"GET /health HTTP/1.1\r\nX-Long: " + std::string(9000, 'a') + "\r\n\r\n",
       "invalid_http_request"},
      // Malformed chunks.
      {"POST /v1/responses HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n"
       "0\r\n\r\n",
       "invalid_body"}};
  for (const auto& [request, code] : cases) {
    const std::string answer = answer_until_close(s.port, request + next);
    INFO(answer);
    CHECK(answer.starts_with("HTTP/1.1 400 Bad Request\r\n"));
    CHECK(answer.find("Connection: close\r\n") != std::string::npos);
    CHECK(answer.find("\"" + code + "\"") != std::string::npos);
    CHECK(answer.find("HTTP/1.1", 1) == std::string::npos);  // one answer, then the close
  }
}

TEST_CASE("requests cpp-httplib refuses before routing: named errors, clean log lines", "[server][http]") {
  LoadingServer s;
  // The sink's own lock guards reading it while the server threads log.
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(16);
  const auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("test", sink);
  logger->set_pattern("%v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::info);
  auto c = s.client();
  auto long_url = c.Get("/v1/responses/" + std::string(10000, 'a'));
  REQUIRE(long_url);
  CHECK(long_url->status == 414);
  CHECK(error_of(long_url)["code"] == "uri_too_long");
  auto [status, seconds] = raw_request(s.port, "FOO /x HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(status == "HTTP/1.1 400 Bad Request");
  // A decoded %0A in a path does not start a line of its own in the log.
  c.Get("/v1/models/x%0Afake%00");
  // The server logs a request after sending its answer: wait for the third entry.
  for (int i = 0; i < 200 && sink->last_formatted().size() < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  spdlog::set_default_logger(previous);
  spdlog::set_level(spdlog::level::warn);
  std::string lines;
  for (const auto& line : sink->last_formatted()) lines += line;
  INFO(lines);
  CHECK(sink->last_formatted().size() == 3);
  CHECK(std::count(lines.begin(), lines.end(), '\n') == 3);
  CHECK(lines.find("x\\x0afake\\x00") != std::string::npos);
  CHECK(lines.find("- - 414 - -") != std::string::npos);  // no method, path, time or client to name
}

namespace {
json post_json(httplib::Client& c, const char* path, const json& body) {
  auto r = c.Post(path, body.dump(), "application/json");
  REQUIRE(r);
  INFO(r->body);
  return {{"status", r->status}, {"body", json::parse(r->body)}};
}

// The minimum a 400 names: "Expected a value >= N, but got ...".
int64_t named_minimum(const json& error) {
  const std::string message = error["message"];
  INFO(message);
  const size_t at = message.find(">= ");
  REQUIRE(at != std::string::npos);
  const int64_t n = std::stoll(message.substr(at + 3));
  CHECK(message.find("takes " + std::to_string(n) + " tokens") != std::string::npos);
  return n;
}
}  // namespace

TEST_CASE("health reports the determinism guarantee the backend declares", "[server][http]") {
  LoadingServer s;
  s.options.exact = true;
  s.options.engine.kv_dtype = gptoss_kv_dtype_bf16;
  s.load_model();  // the scalar kernels, which declare batch invariance
  auto health = s.client().Get("/health");
  REQUIRE(health);
  CHECK(health->status == 200);
  const json d = json::parse(health->body)["determinism"];
  CHECK(d == json{{"batch_invariant", true},
                  {"backend", "cpu"},
                  {"kernels", "scalar"},
                  {"precision", "exact"},
                  {"kv_dtype", "bf16"}});
}

TEST_CASE("structured output over HTTP: a limit below the minimum is a 400 naming it and at the minimum "
          "the answer completes closed by the budget", "[server][http]") {
  LoadingServer s;
  s.load_model();
  auto c = s.client();
  const json format = {{"type", "json_object"}};
  json below = post_json(c, "/v1/responses", {{"model", "m"}, {"input", "hi"}, {"max_output_tokens", 1},
                                              {"text", {{"format", format}}}});
  REQUIRE(below["status"] == 400);
  const json& error = below["body"]["error"];
  CHECK(error["param"] == "max_output_tokens");
  CHECK(error["code"] == "integer_below_min_value");
  CHECK(error["type"] == "invalid_request_error");
  const int64_t min = named_minimum(error);
  CHECK(min > 1);

  // At the minimum exactly: complete, ended by <|return|> within the limit, closed by it.
  json at = post_json(c, "/v1/responses", {{"model", "m"}, {"input", "hi"}, {"max_output_tokens", min},
                                           {"text", {{"format", format}}}, {"seed", 3}, {"temperature", 1.5}});
  REQUIRE(at["status"] == 200);
  const json& r = at["body"];
  CHECK(r["status"] == "completed");
  CHECK(r["closed_by_budget"] == true);
  CHECK(r["usage"]["output_tokens"] <= min);
  std::string text;
  for (const auto& item : r["output"])
    if (item["type"] == "message") text = item["content"][0]["text"];
  CHECK(json::parse(text).is_object());
  auto stored = c.Get("/v1/responses/" + r["id"].get<std::string>());
  REQUIRE(stored);
  CHECK(json::parse(stored->body)["closed_by_budget"] == true);

  // Chat names the field it was given; a forced call has a minimum too.
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "f",
      "parameters": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}}}])");
  json chat_below = post_json(c, "/v1/chat/completions",
                              {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2},
                               {"tools", tools}, {"tool_choice", "required"}});
  REQUIRE(chat_below["status"] == 400);
  CHECK(chat_below["body"]["error"]["param"] == "max_tokens");
  const int64_t call_min = named_minimum(chat_below["body"]["error"]);
  json chat = post_json(c, "/v1/chat/completions",
                        {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}},
                         {"max_completion_tokens", call_min}, {"tools", tools}, {"tool_choice", "required"}, {"seed", 1}});
  REQUIRE(chat["status"] == 200);
  const json& choice = chat["body"]["choices"][0];
  CHECK(choice["finish_reason"] == "tool_calls");
  CHECK(choice["closed_by_budget"] == true);
  CHECK(json::parse(choice["message"]["tool_calls"][0]["function"]["arguments"].get<std::string>())["a"].is_string());

  // Free text is not held to a minimum: cut by the limit, it is incomplete.
  json free = post_json(c, "/v1/responses", {{"model", "m"}, {"input", "hi"}, {"max_output_tokens", 1}});
  REQUIRE(free["status"] == 200);
  CHECK(free["body"]["status"] == "incomplete");
  CHECK(free["body"]["closed_by_budget"] == false);
}

TEST_CASE(
    "a response store that is down: 503 with Retry-After where the store is needed, generation "
    "without it goes on, and all works again when it is back",
    "[server][http]") {
  auto down = std::make_shared<std::atomic<bool>>(false);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("gptoss-http-outage-" + std::to_string(getpid()) + ".sqlite3"))
                               .string();
  LoadingServer s({}, 16u << 20, std::make_unique<OutageStore>(open_response_store(path), down));
  s.load_model();
  auto c = s.client();
  const json stored = {{"model", "m"}, {"input", "hi"}, {"max_output_tokens", 4}, {"seed", 1}};
  json first = post_json(c, "/v1/responses", stored);
  REQUIRE(first["status"] == 200);
  const std::string id = first["body"]["id"];

  down->store(true);
  auto expect_unavailable = [](const httplib::Result& r) {
    REQUIRE(r);
    CHECK(r->status == 503);
    CHECK(r->get_header_value("Retry-After") == "5");
    const json error = error_of(r);
    CHECK(error["code"] == "store_unavailable");
    CHECK(error["message"].get<std::string>().find("test outage") != std::string::npos);
  };
  // Refused before generating (the ping), not after.
  expect_unavailable(c.Post("/v1/responses", stored.dump(), "application/json"));
  expect_unavailable(c.Get("/v1/responses/" + id));
  expect_unavailable(c.Get("/v1/responses/" + id + "/input_items"));
  expect_unavailable(c.Delete("/v1/responses/" + id));
  json previous = stored;
  previous["store"] = false;
  previous["previous_response_id"] = id;
  expect_unavailable(c.Post("/v1/responses", previous.dump(), "application/json"));
  json unstored = stored;
  unstored["store"] = false;
  CHECK(post_json(c, "/v1/responses", unstored)["status"] == 200);
  CHECK(post_json(c, "/v1/chat/completions",
                  {{"model", "m"},
                   {"messages", {{{"role", "user"}, {"content", "hi"}}}},
                   {"max_tokens", 4}})["status"] == 200);

  down->store(false);
  auto back = c.Get("/v1/responses/" + id);
  REQUIRE(back);
  CHECK(back->status == 200);
  CHECK(post_json(c, "/v1/responses", previous)["status"] == 200);
  CHECK(post_json(c, "/v1/responses", stored)["status"] == 200);
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix, ec);
}

TEST_CASE(
    "a response that cannot be stored once generated (the disk filled during its generation): "
    "503 without a stream, response.failed at the end of one",
    "[server][http]") {
  // ping passes, put fails: what the SQLite store does when space runs out after the check.
  struct FullStore : OutageStore {
    using OutageStore::OutageStore;
    void put(const StoredResponse&) override {
      throw StoreError("database or disk is full (test)");
    }
  };
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("gptoss-http-full-" + std::to_string(getpid()) + ".sqlite3"))
                               .string();
  LoadingServer s({}, 16u << 20,
                  std::make_unique<FullStore>(open_response_store(path),
                                              std::make_shared<std::atomic<bool>>(false)));
  s.load_model();
  auto c = s.client();
  json body = {{"model", "m"}, {"input", "hi"}, {"max_output_tokens", 4}, {"seed", 1}};
  auto r = c.Post("/v1/responses", body.dump(), "application/json");
  REQUIRE(r);
  CHECK(r->status == 503);
  CHECK(r->get_header_value("Retry-After") == "5");
  const json error = error_of(r);
  CHECK(error["code"] == "store_unavailable");
  CHECK_THAT(error["message"].get<std::string>(),
             Catch::Contains("generated but could not be stored") &&
                 Catch::Contains("disk is full (test)"));
  body["stream"] = true;
  auto streamed = c.Post("/v1/responses", body.dump(), "application/json");
  REQUIRE(streamed);
  CHECK(streamed->status == 200);
  INFO(streamed->body);
  CHECK(streamed->body.find("event: response.failed") != std::string::npos);
  CHECK(streamed->body.find("could not be stored") != std::string::npos);
  CHECK(streamed->body.find("event: response.completed") == std::string::npos);
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix, ec);
}

TEST_CASE("a streamed stored response is committed before its client is told it finished",
          "[server][http]") {
  // put() waits until released: while it waits, the stream must not have ended.
  struct GatedStore : OutageStore {
    using OutageStore::OutageStore;
    std::promise<void> entered, release;
    void put(const StoredResponse& r) override {
      entered.set_value();
      release.get_future().wait();
      OutageStore::put(r);
    }
  };
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("gptoss-http-order-" + std::to_string(getpid()) + ".sqlite3"))
                               .string();
  auto owned = std::make_unique<GatedStore>(open_response_store(path),
                                            std::make_shared<std::atomic<bool>>(false));
  GatedStore* store = owned.get();
  LoadingServer s({}, 16u << 20, std::move(owned));
  s.load_model();
  std::mutex mutex;
  std::string received;
  std::thread client([&] {
    auto c = s.client();
    const json body = {
        {"model", "m"}, {"input", "hi"}, {"max_output_tokens", 4}, {"stream", true}, {"seed", 1}};
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/responses";
    req.body = body.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      std::lock_guard lock(mutex);
      received.append(data, n);
      return true;
    };
    c.send(req);
  });
  REQUIRE(store->entered.get_future().wait_for(std::chrono::seconds(60)) ==
          std::future_status::ready);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // time for any event to arrive
  {
    std::lock_guard lock(mutex);
    CHECK(received.find("response.created") != std::string::npos);
    CHECK(received.find("event: response.completed") == std::string::npos);
    CHECK(received.find("event: response.incomplete") == std::string::npos);
  }
  store->release.set_value();
  client.join();
  CHECK((received.find("event: response.completed") != std::string::npos ||
         received.find("event: response.incomplete") != std::string::npos));
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix, ec);
}
