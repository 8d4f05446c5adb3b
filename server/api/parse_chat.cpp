// POST /v1/chat/completions: the body -> ChatRequest.
#include "api/api_error.hpp"
#include "api/parse_common.hpp"

namespace gptoss_server {
namespace {

std::string optional_text(const JsonReader& m, const char* key) {
  const json* v = m.find(key);
  return v ? content_text(*v, m.path(key)) : std::string();
}

void parse_assistant(const JsonReader& m, std::vector<ConversationItem>& out) {
  // vLLM and others name the reasoning field differently; both go back as analysis.
  std::string reasoning = optional_text(m, "reasoning_content");
  if (reasoning.empty()) reasoning = optional_text(m, "reasoning");
  if (!reasoning.empty())
    out.push_back({ConversationItem::Kind::reasoning, "assistant", false, reasoning, "", ""});
  const std::string content = optional_text(m, "content");
  const json* calls = m.array("tool_calls");
  const bool has_calls = calls && !calls->empty();
  // Text said before a tool call is a preamble (commentary); otherwise it is the answer.
  if (!content.empty()) out.push_back({ConversationItem::Kind::message, "assistant", has_calls, content, "", ""});
  if (!calls) return;
  for (size_t i = 0; i < calls->size(); ++i) {
    const std::string path = element_path(m.path("tool_calls"), i);
    if (!(*calls)[i].is_object()) throw_wrong_type(path, "an object", (*calls)[i]);
    JsonReader call((*calls)[i], path);
    auto fn = call.object("function");
    if (!fn)
      throw invalid_request("Missing required parameter: '" + call.path("function") + "'.",
                            call.path("function"), "missing_required_parameter");
    ConversationItem item;
    item.kind = ConversationItem::Kind::function_call;
    item.role = "assistant";
    item.call_id = call.required_string("id");
    item.name = fn->required_string("name");
    item.text = fn->string("arguments").value_or("{}");
    out.push_back(std::move(item));
  }
}

std::vector<ConversationItem> parse_messages(const JsonReader& body) {
  const json* messages = body.array("messages");
  if (!messages || messages->empty())
    throw invalid_request("Missing required parameter: 'messages'.", "messages", "missing_required_parameter");
  std::vector<ConversationItem> out;
  for (size_t i = 0; i < messages->size(); ++i) {
    const std::string path = element_path("messages", i);
    if (!(*messages)[i].is_object()) throw_wrong_type(path, "an object", (*messages)[i]);
    JsonReader m((*messages)[i], path);
    const std::string role = m.required_string("role");
    if (role == "system" || role == "developer" || role == "user") {
      const json* content = m.find("content");
      if (!content)
        throw invalid_request("Missing required parameter: '" + m.path("content") + "'.", m.path("content"),
                              "missing_required_parameter");
      out.push_back({ConversationItem::Kind::message, role, false, content_text(*content, m.path("content")), "", ""});
    } else if (role == "assistant") {
      parse_assistant(m, out);
    } else if (role == "tool") {
      ConversationItem item;
      item.kind = ConversationItem::Kind::function_call_output;
      item.call_id = m.required_string("tool_call_id");
      item.text = optional_text(m, "content");
      out.push_back(std::move(item));
    } else {
      throw invalid_request("Invalid value for '" + m.path("role") +
                                "': expected 'system', 'developer', 'user', 'assistant' or 'tool', got '" +
                                excerpt(role) + "'.",
                            m.path("role"), "invalid_value");
    }
  }
  return out;
}

}  // namespace

ChatRequest parse_chat_request(std::string_view text) {
  const json body_json = parse_body(text);
  const JsonReader body(body_json, "");
  ChatRequest r;
  r.model = body.required_string("model");
  r.messages = parse_messages(body);
  parse_tools(body, true, r.setup);
  parse_tool_choice(body, true, r.setup);
  r.setup.parallel_tool_calls = body.boolean("parallel_tool_calls").value_or(true);
  if (auto effort = body.string("reasoning_effort")) r.setup.effort = parse_effort(*effort, "reasoning_effort");
  if (auto format = body.object("response_format")) {
    const std::string type = format->required_string("type");
    if (type == "json_schema") {
      // Chat nests the schema: {type: json_schema, json_schema: {name, schema, strict}}.
      auto inner = format->object("json_schema");
      if (!inner)
        throw invalid_request("Missing required parameter: 'response_format.json_schema'.",
                              "response_format.json_schema", "missing_required_parameter");
      json flat = inner->value();
      flat["type"] = "json_schema";
      r.setup.format = parse_response_format(JsonReader(flat, "response_format.json_schema"));
    } else {
      r.setup.format = parse_response_format(*format);
    }
  }

  r.options.sampling = parse_sampling(body);
  auto max_tokens = body.integer("max_completion_tokens", 1, INT32_MAX);
  r.options.max_tokens_param = "max_completion_tokens";
  if (!max_tokens) {
    max_tokens = body.integer("max_tokens", 1, INT32_MAX);
    r.options.max_tokens_param = "max_tokens";
  }
  r.options.max_tokens = max_tokens;
  r.options.stop = parse_stop(body);
  r.options.max_reasoning_tokens = parse_max_reasoning_tokens(body);
  const bool logprobs = body.boolean("logprobs").value_or(false);
  const auto top_logprobs = body.integer("top_logprobs", 0, 20);
  if (top_logprobs && !logprobs)
    throw invalid_request("'top_logprobs' needs 'logprobs' set to true.", "top_logprobs", "invalid_value");
  if (logprobs) r.options.sampling.logprobs = int(top_logprobs.value_or(0));
  r.n = int(body.integer("n", 1, 16).value_or(1));
  r.stream = parse_stream(body, &r.include_usage);
  return r;
}

}  // namespace gptoss_server
