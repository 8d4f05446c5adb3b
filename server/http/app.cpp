#include "http/app.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <optional>
#include <string_view>

#include "api/api_error.hpp"
#include "api/ids.hpp"
#include "http/handlers.hpp"
#include "http/http_server.hpp"

namespace gptoss_server {

App::App(const ServerOptions& options, std::unique_ptr<ResponseStore> store)
    : ctx_(options, std::move(store)) {}

App::~App() = default;

void App::set_engine(std::unique_ptr<Engine> engine) {
  ctx_.loaded = std::move(engine);
  ctx_.ready.store(true);
}

void App::begin_drain() {
  ctx_.draining.store(true);
  if (ctx_.ready.load()) ctx_.engine().scheduler->drain();
}

void App::cancel_all() {
  if (ctx_.ready.load()) ctx_.engine().scheduler->cancel_all();
}

bool App::drained() const {
  return ctx_.draining.load() && ctx_.active.load() == 0 &&
         (!ctx_.ready.load() || ctx_.loaded->scheduler->idle());
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

// The 408 of a request whose line and headers missed --header-timeout: the connection ends,
// as what follows on it is not known to start a request.
void send_head_timeout(httplib::Response& res, int header_timeout_s) {
  res.set_header("Connection", "close");
  send_json(res, 408,
            ApiError(408, "invalid_request_error",
                     "The request's line and headers did not arrive within " +
                         std::to_string(header_timeout_s) + " s (--header-timeout).",
                     {}, "request_timeout")
                .to_json());
}

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

App::Handler App::endpoint(bool needs_engine, EndpointHandler handler) {
  return [this, needs_engine, handler](const httplib::Request& req, httplib::Response& res) {
    auto active = ctx_.hold_active();
    try {
      if (needs_engine && !ctx_.ready.load())
        throw ApiError(503, "server_error", "The model is still loading; retry shortly.", {}, "model_loading");
      handler(ctx_, req, res);
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
      // The store is down, full or read-only: the request may succeed later, so it is a 503
      // with Retry-After (docs/reliability.md), never a 500 or a wait without end.
      spdlog::error("response store: {}", e.what());
      res.set_header("Retry-After", "5");
      send_json(res, 503,
                ApiError(503, "server_error",
                         std::string("The response store is unavailable: ") + e.what(), {},
                         "store_unavailable")
                    .to_json());
    } catch (const std::exception& e) {
      spdlog::error("{} {}: internal error: {}", req.method, req.path, e.what());
      send_json(res, 500, server_error(std::string("Internal server error: ") + e.what()).to_json());
    }
  };
}

httplib::Server::HandlerWithContentReader App::with_body(Handler handler) {
  return [this, handler](const httplib::Request& req, httplib::Response& res,
                         const httplib::ContentReader& reader) {
    const size_t limit = ctx_.options.max_body_bytes;
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

void App::log_request(const httplib::Request& req, const httplib::Response& res) {
  const std::string seconds =
      request_started
          ? fmt::format("{:.3f}s", std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                                 *request_started)
                                       .count())
          : "-";
  request_started.reset();
  ctx_.metrics.count_request(endpoint_label(req.path), res.status);
  spdlog::info("{} {} {} {} {}", loggable(req.method), loggable(req.path), res.status, seconds,
               loggable(req.remote_addr));
}

void App::register_routes(HttpServer& server) {
  server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    request_started = std::chrono::steady_clock::now();
    const std::string given = req.get_header_value("x-request-id");
    res.set_header("x-request-id", given.empty() ? new_id("req_", 32) : given);
    if (ctx_.options.api_key.empty() || req.path == "/health" || req.path == "/healthz")
      return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (auth.rfind(prefix, 0) == 0 && same_key(auth.substr(prefix.size()), ctx_.options.api_key))
      return httplib::Server::HandlerResponse::Unhandled;
    send_json(res, 401,
              ApiError(401, "invalid_request_error",
                       auth.empty() ? "You didn't provide an API key: send it as 'Authorization: Bearer KEY'."
                                    : "Incorrect API key provided.",
                       {}, "invalid_api_key")
                  .to_json());
    return httplib::Server::HandlerResponse::Handled;
  });
  server.set_error_handler([header_timeout_s = ctx_.options.header_timeout_s](
                               const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (HttpServer::request_head_timed_out()) return send_head_timeout(res, header_timeout_s);
    const int status = res.status;
    // Refused before routing (too long, not parsed, or its headers or body not read whole): where
    // the request ends is unknown, so what follows it on the connection cannot be read as the
    // next request. (A handler's own 400s have a body, and returned above.)
    if (status == 400 || status == 413 || status == 414 || req.path.empty())
      res.set_header("Connection", "close");
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
    } else if (status == 400) {
      message =
          "The request's headers or body could not be read: malformed, or the client sent "
          "nothing for longer than --read-timeout.";
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
  // A request line cut off at the header timeout: no request, so the logger below is not
  // called; counted and logged here as it would be (no method, no path, no time).
  server.set_head_timeout_answer([this](const std::string& remote_addr) {
    httplib::Response res;
    send_head_timeout(res, ctx_.options.header_timeout_s);
    res.set_header("x-request-id", new_id("req_", 32));
    httplib::Request none;
    none.remote_addr = remote_addr;
    log_request(none, res);
    return res;
  });
  server.set_logger(
      [this](const httplib::Request& req, const httplib::Response& res) { log_request(req, res); });

  server.Get("/health", endpoint(false, health));
  server.Get("/healthz", endpoint(false, health));
  server.Get("/metrics", endpoint(false, metrics_text));
  server.Get("/v1/models", endpoint(true, list_models));
  server.Get(R"(/v1/models/(.+))", endpoint(true, get_model));
  auto post = [&](const char* path, EndpointHandler handler) {
    server.Post(path, with_body(endpoint(true, handler)));
  };
  post("/v1/responses", create_response);
  server.Get(R"(/v1/responses/([^/]+))", endpoint(true, get_response));
  server.Delete(R"(/v1/responses/([^/]+))", endpoint(true, delete_response));
  server.Get(R"(/v1/responses/([^/]+)/input_items)", endpoint(true, list_input_items));
  post("/v1/chat/completions", chat_completions);
  post("/v1/completions", completions);
  server.Get("/bench", endpoint(true, bench));
}

}  // namespace gptoss_server
