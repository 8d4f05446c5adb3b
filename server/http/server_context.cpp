#include "http/server_context.hpp"

#include <ctime>

#include "api/api_error.hpp"
#include "api/harmony_conversation.hpp"
#include "engine/sequence.hpp"
#include "http/http_server.hpp"

namespace gptoss_server {

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "application/json");
}

ClientConnection current_client() { return ClientConnection(HttpServer::current_socket()); }

void InflightResponses::add(const std::string& id, std::shared_ptr<Job> job,
                            nlohmann::json snapshot,
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

ServerContext::ServerContext(const ServerOptions& o, std::unique_ptr<ResponseStore> s)
    : options(o), store(std::move(s)), created(int64_t(std::time(nullptr))) {}

std::shared_ptr<void> ServerContext::hold_active() {
  ++active;
  return std::shared_ptr<void>(nullptr, [this](void*) { --active; });
}

nlohmann::json ServerContext::model_object() const {
  return {{"id", options.model_name},
          {"object", "model"},
          {"created", created},
          {"owned_by", "gptoss"},
          {"context_length", options.engine.context_length}};
}

void ServerContext::check_generations(size_t count, const char* param) const {
  const size_t max_queue = options.engine.max_queue;
  if (count > max_queue)
    throw invalid_request("This request asks for " + std::to_string(count) +
                              " generations; this server queues at most " +
                              std::to_string(max_queue) + " at once (--max-queue).",
                          param, "invalid_value");
}

void ServerContext::check_model(const std::string& model) const {
  if (model != options.model_name)
    throw not_found("The model '" + model + "' does not exist (this server serves '" +
                        options.model_name + "').",
                    "model", "model_not_found");
}

std::vector<uint32_t> ServerContext::render_prompt(const nlohmann::json& conversation,
                                                   const char* items_param) {
  std::vector<uint32_t> prompt;
  try {
    prompt = gptoss::render(loaded->tokenizer.get(), conversation.dump());
  } catch (const gptoss::error& e) {
    // The renderer refuses what the request put in the conversation (a schema it cannot
    // render, ...): the client's to fix.
    if (e.status() != gptoss_status_invalid_argument) throw;
    throw invalid_request("The conversation could not be rendered: " + e.message(), items_param,
                          "invalid_value");
  }
  const size_t context = options.engine.context_length;
  if (prompt.size() >= context)
    throw invalid_request("This model's maximum context length is " + std::to_string(context) +
                              " tokens. However, your request resulted in " +
                              std::to_string(prompt.size()) +
                              " tokens of prompt (and at least one is needed for the output).",
                          items_param, "context_length_exceeded");
  return prompt;
}

Grammar ServerContext::constraint_grammar(const ChatSetup& setup, const char* tools_param,
                                          const char* format_param) {
  if (!options.constrain) return nullptr;
  try {
    return loaded->grammars->harmony(constraint_spec(setup).dump());
  } catch (const gptoss::error& e) {
    if (e.status() != gptoss_status_invalid_argument &&
        e.status() != gptoss_status_unsupported_argument)
      throw;
    // The compiler names the spec's path: spec_json.tools.functions.tools[0].parameters or
    // spec_json.response_format.schema; said in the request's own terms.
    std::string detail = e.message();
    const bool format = detail.find("spec_json.response_format") != std::string::npos;
    for (auto [from, to] :
         {std::pair<std::string, std::string>{"spec_json.tools.functions.tools", tools_param},
          {"spec_json.response_format", format_param}})
      if (auto at = detail.find(from); at != std::string::npos) detail.replace(at, from.size(), to);
    throw invalid_request(
        std::string(format ? "Invalid response format schema: " : "Invalid tool schema: ") + detail,
        format ? format_param : tools_param,
        format ? "invalid_response_format" : "invalid_function_parameters");
  }
}

void ServerContext::budget_structured_output(GenerationSpec& spec, const ChatSetup& setup,
                                             const GenerationOptions& generation,
                                             const char* items_param) const {
  const bool forced_call = setup.tool_choice.mode == ToolChoice::Mode::required ||
                           setup.tool_choice.mode == ToolChoice::Mode::function;
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
    if (generation.max_tokens && *generation.max_tokens < shortest) {
      const std::string& param = generation.max_tokens_param;
      throw invalid_request(
          "Invalid '" + param +
              "': integer below minimum value. Expected a value >= " + std::to_string(shortest) +
              ", but got " + std::to_string(*generation.max_tokens) + " instead: " + what + ".",
          param, "integer_below_min_value");
    }
    throw invalid_request(
        "This model's maximum context length is " + std::to_string(options.engine.context_length) +
            " tokens. However, your request resulted in " + std::to_string(spec.prompt.size()) +
            " tokens of prompt, which leaves " + std::to_string(budget) + " for the output, and " +
            what + ".",
        items_param, "context_length_exceeded");
  }
  spec.complete_within_max_tokens = true;
}

int64_t ServerContext::reasoning_budget(const ChatSetup& setup,
                                        std::optional<int64_t> requested) const {
  if (requested) return *requested;
  return options.reasoning_budget[int(setup.effort.value_or(ReasoningEffort::medium))];
}

std::string ServerContext::conversation_date() const {
  return options.conversation_date.empty() ? utc_date_today() : options.conversation_date;
}

size_t ServerContext::output_budget(size_t prompt_tokens, std::optional<int64_t> max_tokens) const {
  const size_t room = options.engine.context_length - prompt_tokens;
  return max_tokens ? std::min(room, size_t(*max_tokens)) : room;
}

GenerationSpec ServerContext::harmony_spec(const ChatSetup& setup,
                                           const std::vector<ConversationItem>& items,
                                           const GenerationOptions& generation,
                                           const char* items_param, const char* format_param) {
  const nlohmann::json conversation =
      harmony_conversation(setup, items, conversation_date(), items_param);
  GenerationSpec spec;
  spec.prompt = render_prompt(conversation, items_param);
  spec.sampling = generation.sampling;
  spec.max_tokens = output_budget(spec.prompt.size(), generation.max_tokens);
  spec.stop = generation.stop;
  spec.grammar = constraint_grammar(setup, "tools", format_param);
  spec.max_reasoning_tokens = reasoning_budget(setup, generation.max_reasoning_tokens);
  budget_structured_output(spec, setup, generation, items_param);
  return spec;
}

}  // namespace gptoss_server
