#pragma once
// What every endpoint handler (http/handlers.hpp) works over: the options, the response store,
// the metrics, the loaded engine, the responses in flight, and the steps several endpoints
// share (checking the model, rendering a prompt, the generation spec of a Harmony chat).
#include <httplib.h>
#include <gptoss.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/request.hpp"
#include "engine/grammar_cache.hpp"
#include "engine/scheduler.hpp"
#include "http/client_connection.hpp"
#include "metrics.hpp"
#include "server_options.hpp"
#include "store/response_store.hpp"

namespace gptoss_server {

// The loaded model and the scheduler that runs it.
struct Engine {
  gptoss::model model;
  gptoss::model draft_model;  // --draft-model (null without); outlives the scheduler's speculators
  gptoss::tokenizer tokenizer;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<GrammarCache> grammars;
  std::string backend;
  size_t vocab_size = 0;
  // What the backend declares (gptoss_model_info): whether a request's tokens and logprobs
  // for its seed are independent of what runs with it, and its kernel variant.
  bool batch_invariant = false;
  std::string kernels;
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

struct ServerContext {
  ServerContext(const ServerOptions& o, std::unique_ptr<ResponseStore> s);

  const ServerOptions& options;
  std::unique_ptr<ResponseStore> store;
  Metrics metrics;
  std::unique_ptr<Engine> loaded;  // set once, when the model is loaded (then ready)
  std::atomic<bool> ready{false};
  std::atomic<bool> draining{false};
  std::atomic<int> active{0};  // requests in handlers or streaming
  InflightResponses inflight;
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  const int64_t created = 0;

  // Handlers of endpoints that need the model run only once it is loaded (App::endpoint).
  Engine& engine() { return *loaded; }
  // Counts a request as active (drain waits for it) until the returned token is dropped;
  // streaming responses keep it until their last event.
  std::shared_ptr<void> hold_active();
  void check_model(const std::string& model) const;
  // Each choice of each prompt (and each /bench stream) is a generation queued like a request:
  // more than --max-queue could never be admitted, so it is the request's mistake (400), not a
  // full queue to retry (429).
  void check_generations(size_t count, const char* param) const;
  // The generation of a Harmony chat (Responses, Chat Completions): the conversation rendered
  // (400 naming `items_param` when it is too long for the context), the request's sampling,
  // limits and stop strings, the grammar of its tools and format (a schema the compiler
  // refuses is a 400 naming "tools" or `format_param`), the reasoning budget, and the budget
  // of structured output.
  GenerationSpec harmony_spec(const ChatSetup& setup, const std::vector<ConversationItem>& items,
                              const GenerationOptions& generation, const char* items_param,
                              const char* format_param);
  // Tokens left for the output after `prompt_tokens`, at most the request's max_tokens.
  size_t output_budget(size_t prompt_tokens, std::optional<int64_t> max_tokens) const;
  nlohmann::json model_object() const;

 private:
  // Rendered prompt of a Harmony conversation; 400 when it is too long for the context.
  std::vector<uint32_t> render_prompt(const nlohmann::json& conversation, const char* items_param);
  // The grammar that holds a Harmony chat's output to its setup (null with --no-constrain).
  Grammar constraint_grammar(const ChatSetup& setup, const char* tools_param,
                             const char* format_param);
  // Structured output (a JSON response format, a forced tool call) must come out complete:
  // the constraint gets spec.max_tokens as its budget. A budget below the shortest complete
  // output is a 400 before anything runs: naming generation.max_tokens_param when the request's
  // limit is too small, `items_param` (context_length_exceeded) when the context is.
  void budget_structured_output(GenerationSpec& spec, const ChatSetup& setup,
                                const GenerationOptions& generation, const char* items_param) const;
  // max_reasoning_tokens: the request's, else the server's default for its effort.
  int64_t reasoning_budget(const ChatSetup& setup, std::optional<int64_t> requested) const;
  // The "Current date" of a prompt's system message: --date, else today (UTC).
  std::string conversation_date() const;
};

// The connection of the request this thread is answering, watched while its generations run.
ClientConnection current_client();

// Sends `body` as JSON with `status`.
void send_json(httplib::Response& res, int status, const nlohmann::json& body);

}  // namespace gptoss_server
