#pragma once
// The HTTP side of gptoss-server: routes, authentication, OpenAI-shaped errors, and the
// handlers of every endpoint. Request threads parse, render and tokenize, then hand a job to
// the scheduler and follow its events (docs/server.md).
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "api/request.hpp"
#include "engine/grammar_cache.hpp"
#include "engine/scheduler.hpp"
#include "metrics.hpp"
#include "server_options.hpp"
#include "store/response_store.hpp"

namespace gptoss_server {

struct ResponseRun;

// The loaded model and the scheduler that runs it.
struct Engine {
  ModelHandle model;
  TokenizerHandle tokenizer;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<GrammarCache> grammars;
  std::string backend;
  size_t vocab_size = 0;
};

// Responses being generated, for GET (a snapshot), input_items and DELETE (cancellation) by id.
class InflightResponses {
 public:
  // input_items is shared with the request that generates the response (not copied per entry).
  void add(const std::string& id, std::shared_ptr<Job> job, nlohmann::json snapshot,
           std::shared_ptr<const nlohmann::json> input_items);
  void remove(const std::string& id);
  bool contains(const std::string& id) const;
  std::optional<nlohmann::json> snapshot(const std::string& id) const;
  // The input the response is being generated from (what input_items lists once it is
  // stored); null when no such response is in flight.
  std::shared_ptr<const nlohmann::json> input_items(const std::string& id) const;
  bool cancel(const std::string& id);

 private:
  struct Entry {
    std::shared_ptr<Job> job;
    nlohmann::json snapshot;
    std::shared_ptr<const nlohmann::json> input_items;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
};

class App {
 public:
  App(const ServerOptions& options, std::unique_ptr<ResponseStore> store);
  ~App();

  void register_routes(httplib::Server& server);
  // The model is loaded: requests are served from now on.
  void set_engine(std::unique_ptr<Engine> engine);
  // New generations get 503 from now on; running ones finish.
  void begin_drain();
  // Draining and nothing left running.
  bool drained() const;
  // Cancels every generation (a forced shutdown).
  void cancel_all();
  Metrics& metrics() { return metrics_; }

 private:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  // Wraps an endpoint: 503 while loading, exceptions to OpenAI-shaped errors.
  Handler endpoint(bool needs_engine, Handler handler);
  // A POST endpoint that reads its own body, so --max-body-bytes holds for every body: a
  // Content-Length over it is refused before a byte is read, a chunked or compressed body as
  // soon as it passes it (413). cpp-httplib 0.11 limits neither, and skips an oversized
  // Content-Length by reading it.
  httplib::Server::HandlerWithContentReader with_body(Handler handler);
  Engine& engine() { return *engine_; }
  // Counts a request as active (drain waits for it) until the returned token is dropped;
  // streaming responses keep it until their last event.
  std::shared_ptr<void> hold_active();
  void check_model(const std::string& model) const;
  // Each choice of each prompt (and each /bench stream) is a generation queued like a request:
  // more than --max-queue could never be admitted, so it is the request's mistake (400), not a
  // full queue to retry (429).
  void check_generations(size_t count, const char* param) const;
  // Rendered prompt of a Harmony conversation; 400 when it is too long for the context.
  std::vector<uint32_t> render_prompt(const nlohmann::json& conversation, const char* items_param);
  size_t output_budget(size_t prompt_tokens, std::optional<int64_t> max_tokens) const;
  // The grammar that holds a Harmony chat's output to its setup (null with --no-constrain);
  // a schema the compiler refuses is a 400 naming `tools_param` or `format_param`.
  Grammar constraint_grammar(const ChatSetup& setup, const char* tools_param, const char* format_param);
  // Structured output (a JSON response format, a forced tool call) must come out complete:
  // the constraint gets spec.max_tokens as its budget. A budget below the shortest complete
  // output is a 400 before anything runs: naming options.max_tokens_param when the request's
  // limit is too small, `items_param` (context_length_exceeded) when the context is.
  void budget_structured_output(GenerationSpec& spec, const ChatSetup& setup, const GenerationOptions& options,
                                const char* items_param) const;
  // max_reasoning_tokens: the request's, else the server's default for its effort.
  int64_t reasoning_budget(const ChatSetup& setup, std::optional<int64_t> requested) const;
  // The "Current date" of a prompt's system message: --date, else today (UTC).
  std::string conversation_date() const;

  void health(const httplib::Request& req, httplib::Response& res);
  void metrics_text(const httplib::Request& req, httplib::Response& res);
  void list_models(const httplib::Request& req, httplib::Response& res);
  void get_model(const httplib::Request& req, httplib::Response& res);
  void create_response(const httplib::Request& req, httplib::Response& res);
  // The generation ended: closes the response, stores it when asked (a failure to store fails
  // it), and gives the last events.
  std::vector<nlohmann::json> complete_response(ResponseRun& run, const Finish& finish);
  void get_response(const httplib::Request& req, httplib::Response& res);
  void delete_response(const httplib::Request& req, httplib::Response& res);
  void list_input_items(const httplib::Request& req, httplib::Response& res);
  void chat_completions(const httplib::Request& req, httplib::Response& res);
  void completions(const httplib::Request& req, httplib::Response& res);
  void bench(const httplib::Request& req, httplib::Response& res);
  nlohmann::json model_object() const;

  const ServerOptions& options_;
  std::unique_ptr<ResponseStore> store_;
  Metrics metrics_;
  std::unique_ptr<Engine> engine_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> draining_{false};
  std::atomic<int> active_{0};  // requests in handlers or streaming
  InflightResponses inflight_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  const int64_t created_ = 0;
};

// Sends `body` as JSON with `status`.
void send_json(httplib::Response& res, int status, const nlohmann::json& body);

}  // namespace gptoss_server
