#pragma once
// The HTTP side of gptoss-server: routes, authentication, request ids, logging and
// OpenAI-shaped errors around the endpoint handlers (http/handlers.hpp, one unit each), which
// work over the shared ServerContext. Request threads parse, render and tokenize, then hand a
// job to the scheduler and follow its events (docs/server.md).
#include <httplib.h>

#include <functional>
#include <memory>

#include "http/http_server.hpp"
#include "http/server_context.hpp"

namespace gptoss_server {

class App {
 public:
  App(const ServerOptions& options, std::unique_ptr<ResponseStore> store);
  ~App();

  void register_routes(HttpServer& server);
  // The model is loaded: requests are served from now on.
  void set_engine(std::unique_ptr<Engine> engine);
  // New generations get 503 from now on; running ones finish.
  void begin_drain();
  // Draining and nothing left running.
  bool drained() const;
  // Cancels every generation (a forced shutdown).
  void cancel_all();
  Metrics& metrics() { return ctx_.metrics; }

 private:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  using EndpointHandler = void (*)(ServerContext&, const httplib::Request&, httplib::Response&);
  // Wraps an endpoint: 503 while loading, exceptions to OpenAI-shaped errors.
  Handler endpoint(bool needs_engine, EndpointHandler handler);
  // A POST endpoint that reads its own body, so --max-body-bytes holds for every body: a
  // Content-Length over it is refused before a byte is read, a chunked or compressed body as
  // soon as it passes it (413). cpp-httplib 0.11 limits neither, and skips an oversized
  // Content-Length by reading it.
  httplib::Server::HandlerWithContentReader with_body(Handler handler);
  // One access-log line and the request counter for an answered request.
  void log_request(const httplib::Request& req, const httplib::Response& res);

  ServerContext ctx_;
};

}  // namespace gptoss_server
