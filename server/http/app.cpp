#include "http/app.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <ctime>
#include <optional>
#include <string_view>

#include "api/api_error.hpp"
#include "api/harmony_conversation.hpp"
#include "api/ids.hpp"
#include "engine/capi.hpp"
#include "engine/sequence.hpp"

namespace gptoss_server {

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

void InflightResponses::add(const std::string& id, std::shared_ptr<Job> job, nlohmann::json snapshot,
                            std::shared_ptr<const nlohmann::json> input_items) {
  std::lock_guard lock(mutex_);
  entries_[id] = {std::move(job), std::move(snapshot), std::move(input_items)};
}

void InflightResponses::remove(const std::string& id) {
  std::lock_guard lock(mutex_);
  entries_.erase(id);
}

bool InflightResponses::contains(const std::string& id) const {
  std::lock_guard lock(mutex_);
  return entries_.count(id) != 0;
}

std::optional<nlohmann::json> InflightResponses::snapshot(const std::string& id) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  return it->second.snapshot;
}

std::shared_ptr<const nlohmann::json> InflightResponses::input_items(const std::string& id) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : it->second.input_items;
}

bool InflightResponses::cancel(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  it->second.job->cancel();
  return true;
}

App::App(const ServerOptions& options, std::unique_ptr<ResponseStore> store)
    : options_(options), store_(std::move(store)), created_(int64_t(std::time(nullptr))) {}

App::~App() = default;

void App::set_engine(std::unique_ptr<Engine> engine) {
  engine_ = std::move(engine);
  ready_.store(true);
}

void App::begin_drain() {
  draining_.store(true);
  if (ready_.load()) engine_->scheduler->drain();
}

void App::cancel_all() {
  if (ready_.load()) engine_->scheduler->cancel_all();
}

bool App::drained() const {
  return draining_.load() && active_.load() == 0 && (!ready_.load() || engine_->scheduler->idle());
}

std::shared_ptr<void> App::hold_active() {
  ++active_;
  return std::shared_ptr<void>(nullptr, [this](void*) { --active_; });
}

namespace {

// The metrics label of a path: ids replaced, unknown paths folded.
std::string endpoint_label(const std::string& path) {
  static const char* exact[] = {"/v1/responses", "/v1/chat/completions", "/v1/completions", "/v1/models",
                                "/health", "/healthz", "/metrics", "/bench"};
  for (const char* e : exact)
    if (path == e) return e;
  if (path.rfind("/v1/responses/", 0) == 0)
    return path.size() > 12 && path.ends_with("/input_items") ? "/v1/responses/{id}/input_items" : "/v1/responses/{id}";
  if (path.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
  return "other";
}

bool same_key(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;  // every byte compared, so timing does not reveal a matching prefix
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// Set by the pre-routing handler; requests cpp-httplib refuses before routing (a bad request
// line, a URL too long) have no start time.
thread_local std::optional<std::chrono::steady_clock::time_point> request_started;

// `s` for a log line: control bytes (a decoded %0A or %00 in a path) as \xNN, so a request
// cannot forge or cut lines of the log; at most 256 bytes.
std::string loggable(std::string_view s) {
  if (s.empty()) return "-";
  std::string out;
  for (unsigned char c : excerpt(s, 256)) {
    if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += char(c);
  }
  return out;
}

}  // namespace

App::Handler App::endpoint(bool needs_engine, Handler handler) {
  return [this, needs_engine, handler](const httplib::Request& req, httplib::Response& res) {
    auto active = hold_active();
    try {
      if (needs_engine && !ready_.load())
        throw ApiError(503, "server_error", "The model is still loading; retry shortly.", {}, "model_loading");
      handler(req, res);
    } catch (const ApiError& e) {
      send_json(res, e.status(), e.to_json());
    } catch (const QueueFull& e) {
      res.set_header("Retry-After", "1");
      send_json(res, 429,
                ApiError(429, "requests", std::string(e.what()) + "; retry shortly.", {}, "rate_limit_exceeded").to_json());
    } catch (const NotAccepting& e) {
      send_json(res, 503, ApiError(503, "server_error", "The server is shutting down (" + std::string(e.what()) +
                                       "): it takes no new requests; retry on another replica or after its restart.",
                                   {}, "server_shutting_down")
                              .to_json());
    } catch (const StoreError& e) {
      spdlog::error("response store: {}", e.what());
      send_json(res, 500, server_error(std::string("The response store failed: ") + e.what()).to_json());
    } catch (const std::exception& e) {
      spdlog::error("{} {}: internal error: {}", req.method, req.path, e.what());
      send_json(res, 500, server_error(std::string("Internal server error: ") + e.what()).to_json());
    }
  };
}

httplib::Server::HandlerWithContentReader App::with_body(Handler handler) {
  return [this, handler](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    const size_t limit = options_.max_body_bytes;
    auto refuse = [&](int status, std::string message, const char* code) {
      res.set_header("Connection", "close");  // the rest of the body is never read
      send_json(res, status, ApiError(status, "invalid_request_error", std::move(message), {}, code).to_json());
    };
    const std::string too_large = "The request body is too large (the limit is " + std::to_string(limit) + " bytes).";
    if (req.has_header("Content-Length")) {
      const std::string length = req.get_header_value("Content-Length");
      if (length.empty() || length.size() > 19 || length.find_first_not_of("0123456789") != std::string::npos)
        return refuse(400, "The Content-Length header is not a number: '" + excerpt(length) + "'.",
                      "invalid_content_length");
      if (std::stoull(length) > limit) return refuse(413, too_large, "request_too_large");
    }
    std::string body;
    bool over = false;
    // Without a Content-Length or a chunked encoding a request has no body (RFC 9112 6.3);
    // cpp-httplib would read until the client closes.
    const bool has_body = req.has_header("Content-Length") || req.has_header("Transfer-Encoding");
    const bool read = !has_body || reader([&](const char* data, size_t size) {
      over = body.size() + size > limit;
      if (!over) body.append(data, size);
      return !over;
    });
    if (over) return refuse(413, too_large, "request_too_large");
    if (!read) return refuse(400, "The request body could not be read.", "invalid_body");
    httplib::Request whole = req;
    whole.body = std::move(body);
    handler(whole, res);
  };
}

void App::register_routes(httplib::Server& server) {
  server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    request_started = std::chrono::steady_clock::now();
    const std::string given = req.get_header_value("x-request-id");
    res.set_header("x-request-id", given.empty() ? new_id("req_", 32) : given);
    if (options_.api_key.empty() || req.path == "/health" || req.path == "/healthz")
      return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (auth.rfind(prefix, 0) == 0 && same_key(auth.substr(prefix.size()), options_.api_key))
      return httplib::Server::HandlerResponse::Unhandled;
    send_json(res, 401,
              ApiError(401, "invalid_request_error",
                       auth.empty() ? "You didn't provide an API key: send it as 'Authorization: Bearer KEY'."
                                    : "Incorrect API key provided.",
                       {}, "invalid_api_key")
                  .to_json());
    return httplib::Server::HandlerResponse::Handled;
  });
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const int status = res.status;
    std::string message = "Unknown request URL: " + req.method + " " + req.path + ".";
    std::string code = "unknown_url";
    if (status == 413) {
      message = "The request body is too large.";
      code = "request_too_large";
    } else if (status == 414) {
      message = "The request URL is too long.";
      code = "uri_too_long";
    } else if (req.path.empty()) {
      // cpp-httplib refused the request line or headers before routing: no path to name.
      message = req.method.empty() ? "The request could not be parsed as HTTP."
                                   : "The request could not be parsed as HTTP (method '" + excerpt(req.method) + "').";
      code = "invalid_http_request";
    } else if (status != 404) {
      message = "HTTP error " + std::to_string(status) + " for " + req.method + " " + excerpt(req.path) + ".";
      code = "";
    }
    send_json(res, status, ApiError(status, "invalid_request_error", message, {}, code).to_json());
  });
  server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    spdlog::error("internal error: {}", what);
    send_json(res, 500, server_error("Internal server error: " + what).to_json());
  });
  server.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    const std::string seconds =
        request_started
            ? fmt::format("{:.3f}s", std::chrono::duration<double>(std::chrono::steady_clock::now() - *request_started).count())
            : "-";
    request_started.reset();
    metrics_.count_request(endpoint_label(req.path), res.status);
    spdlog::info("{} {} {} {} {}", loggable(req.method), loggable(req.path), res.status, seconds, loggable(req.remote_addr));
  });

  auto bind = [this](auto member, bool needs_engine = true) {
    return endpoint(needs_engine, [this, member](const httplib::Request& req, httplib::Response& res) {
      (this->*member)(req, res);
    });
  };
  server.Get("/health", bind(&App::health, false));
  server.Get("/healthz", bind(&App::health, false));
  server.Get("/metrics", bind(&App::metrics_text, false));
  server.Get("/v1/models", bind(&App::list_models));
  server.Get(R"(/v1/models/(.+))", bind(&App::get_model));
  auto post = [&](const char* path, auto member) { server.Post(path, with_body(bind(member))); };
  post("/v1/responses", &App::create_response);
  server.Get(R"(/v1/responses/([^/]+))", bind(&App::get_response));
  server.Delete(R"(/v1/responses/([^/]+))", bind(&App::delete_response));
  server.Get(R"(/v1/responses/([^/]+)/input_items)", bind(&App::list_input_items));
  post("/v1/chat/completions", &App::chat_completions);
  post("/v1/completions", &App::completions);
  server.Get("/bench", bind(&App::bench));
}

void App::health(const httplib::Request&, httplib::Response& res) {
  const double uptime = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  if (!ready_.load()) {
    send_json(res, 503, {{"status", "loading"}, {"model", options_.model_name}, {"uptime_seconds", uptime}});
    return;
  }
  const bool draining = draining_.load();
  send_json(res, draining ? 503 : 200,
            {{"status", draining ? "draining" : "ok"},
             {"model", options_.model_name},
             {"backend", engine_->backend},
             {"uptime_seconds", uptime}});
}

void App::metrics_text(const httplib::Request&, httplib::Response& res) {
  res.set_content(metrics_.prometheus(ready_.load() ? engine_->scheduler->gauges() : EngineGauges{}),
                  "text/plain; version=0.0.4");
}

nlohmann::json App::model_object() const {
  return {{"id", options_.model_name},
          {"object", "model"},
          {"created", created_},
          {"owned_by", "gptoss"},
          {"context_length", options_.engine.context_length}};
}

void App::list_models(const httplib::Request&, httplib::Response& res) {
  send_json(res, 200, {{"object", "list"}, {"data", nlohmann::json::array({model_object()})}});
}

void App::get_model(const httplib::Request& req, httplib::Response& res) {
  check_model(req.matches[1]);
  send_json(res, 200, model_object());
}

void App::check_generations(size_t count, const char* param) const {
  const size_t max_queue = options_.engine.max_queue;
  if (count > max_queue)
    throw invalid_request("This request asks for " + std::to_string(count) + " generations; this server queues at most " +
                              std::to_string(max_queue) + " at once (--max-queue).",
                          param, "invalid_value");
}

void App::check_model(const std::string& model) const {
  if (model != options_.model_name)
    throw not_found("The model '" + model + "' does not exist (this server serves '" + options_.model_name + "').",
                    "model", "model_not_found");
}

std::vector<uint32_t> App::render_prompt(const nlohmann::json& conversation, const char* items_param) {
  std::vector<uint32_t> prompt;
  try {
    prompt = render_conversation(engine_->tokenizer.get(), conversation.dump());
  } catch (const EngineError& e) {
    // The renderer refuses what the request put in the conversation (a schema it cannot
    // render, ...): the client's to fix.
    if (e.status() != gptoss_status_invalid_argument) throw;
    throw invalid_request("The conversation could not be rendered: " + e.detail(), items_param, "invalid_value");
  }
  const size_t context = options_.engine.context_length;
  if (prompt.size() >= context)
    throw invalid_request("This model's maximum context length is " + std::to_string(context) +
                              " tokens. However, your request resulted in " + std::to_string(prompt.size()) +
                              " tokens of prompt (and at least one is needed for the output).",
                          items_param, "context_length_exceeded");
  return prompt;
}

Grammar App::constraint_grammar(const ChatSetup& setup, const char* tools_param, const char* format_param) {
  if (!options_.constrain) return nullptr;
  try {
    return engine_->grammars->harmony(constraint_spec(setup).dump());
  } catch (const EngineError& e) {
    if (e.status() != gptoss_status_invalid_argument && e.status() != gptoss_status_unsupported_argument) throw;
    // The compiler names the spec's path: spec_json.tools.functions.tools[0].parameters or
    // spec_json.response_format.schema; said in the request's own terms.
    std::string detail = e.detail();
    const bool format = detail.find("spec_json.response_format") != std::string::npos;
    for (auto [from, to] : {std::pair<std::string, std::string>{"spec_json.tools.functions.tools", tools_param},
                            {"spec_json.response_format", format_param}})
      if (auto at = detail.find(from); at != std::string::npos) detail.replace(at, from.size(), to);
    throw invalid_request(std::string(format ? "Invalid response format schema: " : "Invalid tool schema: ") + detail,
                          format ? format_param : tools_param,
                          format ? "invalid_response_format" : "invalid_function_parameters");
  }
}

void App::budget_structured_output(GenerationSpec& spec, const ChatSetup& setup, const GenerationOptions& options,
                                   const char* items_param) const {
  const bool forced_call =
      setup.tool_choice.mode == ToolChoice::Mode::required || setup.tool_choice.mode == ToolChoice::Mode::function;
  const bool structured = forced_call || setup.format.type != ResponseFormat::Type::text;
  // Free text keeps the API's behaviour: cut by the limit, it ends `incomplete`.
  if (!spec.grammar || !structured) return;
  const int64_t shortest = shortest_output_tokens(spec.grammar, spec.max_reasoning_tokens);
  if (shortest < 0) return;  // no complete output exists to steer to (the library refuses a budget)
  const size_t budget = spec.max_tokens;
  if (int64_t(budget) < shortest) {
    const std::string what = "the shortest complete output this request allows (its " +
                             std::string(forced_call ? "forced tool call" : "response format") +
                             ") takes " + std::to_string(shortest) + " tokens";
    if (options.max_tokens && *options.max_tokens < shortest) {
      const std::string& param = options.max_tokens_param;
      throw invalid_request("Invalid '" + param + "': integer below minimum value. Expected a value >= " +
                                std::to_string(shortest) + ", but got " + std::to_string(*options.max_tokens) +
                                " instead: " + what + ".",
                            param, "integer_below_min_value");
    }
    throw invalid_request("This model's maximum context length is " + std::to_string(options_.engine.context_length) +
                              " tokens. However, your request resulted in " + std::to_string(spec.prompt.size()) +
                              " tokens of prompt, which leaves " + std::to_string(budget) + " for the output, and " +
                              what + ".",
                          items_param, "context_length_exceeded");
  }
  spec.complete_within_max_tokens = true;
}

int64_t App::reasoning_budget(const ChatSetup& setup, std::optional<int64_t> requested) const {
  if (requested) return *requested;
  return options_.reasoning_budget[int(setup.effort.value_or(ReasoningEffort::medium))];
}

std::string App::conversation_date() const {
  return options_.conversation_date.empty() ? utc_date_today() : options_.conversation_date;
}

size_t App::output_budget(size_t prompt_tokens, std::optional<int64_t> max_tokens) const {
  const size_t room = options_.engine.context_length - prompt_tokens;
  return max_tokens ? std::min(room, size_t(*max_tokens)) : room;
}

}  // namespace gptoss_server
