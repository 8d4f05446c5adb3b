// POST /v1/responses: the body -> ResponsesRequest. Input items are normalized twice: to
// ConversationItems for rendering, and to the Responses item shape that the store keeps and
// GET /v1/responses/{id}/input_items lists.
#include <set>

#include "api/api_error.hpp"
#include "api/parse_common.hpp"

namespace gptoss_server {
namespace {

json text_part(const std::string& role, const std::string& text) {
  if (role == "assistant") return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}};
  return {{"type", "input_text"}, {"text", text}};
}

// Copies a client-given item id (ids of earlier outputs come back this way).
void keep_id(const JsonReader& r, json& item) {
  if (auto id = r.string("id")) item["id"] = *id;
}

void parse_message(const JsonReader& r, ResponsesRequest& out) {
  ConversationItem item;
  item.role = r.required_string("role");
  if (item.role != "user" && item.role != "system" && item.role != "developer" && item.role != "assistant")
    throw invalid_request("Invalid value for '" + r.path("role") +
                              "': expected 'user', 'system', 'developer' or 'assistant', got '" +
                              excerpt(item.role) + "'.",
                          r.path("role"), "invalid_value");
  const json* content = r.find("content");
  if (!content)
    throw invalid_request("Missing required parameter: '" + r.path("content") + "'.", r.path("content"),
                          "missing_required_parameter");
  item.text = content_text(*content, r.path("content"));
  if (auto phase = r.string("phase")) item.preamble = item.role == "assistant" && *phase == "commentary";
  json stored = {{"type", "message"}, {"role", item.role}, {"content", json::array({text_part(item.role, item.text)})},
                 {"status", "completed"}};
  if (item.preamble) stored["phase"] = "commentary";
  keep_id(r, stored);
  out.input_items.push_back(std::move(stored));
  out.input.push_back(std::move(item));
}

void parse_function_call(const JsonReader& r, ResponsesRequest& out) {
  ConversationItem item;
  item.kind = ConversationItem::Kind::function_call;
  item.call_id = r.required_string("call_id");
  item.name = r.required_string("name");
  item.text = r.required_string("arguments");
  json stored = {{"type", "function_call"}, {"call_id", item.call_id}, {"name", item.name},
                 {"arguments", item.text}, {"status", "completed"}};
  keep_id(r, stored);
  out.input_items.push_back(std::move(stored));
  out.input.push_back(std::move(item));
}

void parse_function_call_output(const JsonReader& r, ResponsesRequest& out) {
  ConversationItem item;
  item.kind = ConversationItem::Kind::function_call_output;
  item.call_id = r.required_string("call_id");
  const json* output = r.find("output");
  if (!output)
    throw invalid_request("Missing required parameter: '" + r.path("output") + "'.", r.path("output"),
                          "missing_required_parameter");
  item.text = content_text(*output, r.path("output"));
  json stored = {{"type", "function_call_output"}, {"call_id", item.call_id}, {"output", item.text},
                 {"status", "completed"}};
  keep_id(r, stored);
  out.input_items.push_back(std::move(stored));
  out.input.push_back(std::move(item));
}

// Reasoning goes back to the model as an analysis message; its text is in `content`
// (reasoning_text parts), or only in `summary` when another server produced it.
void parse_reasoning(const JsonReader& r, ResponsesRequest& out) {
  ConversationItem item;
  item.kind = ConversationItem::Kind::reasoning;
  auto texts = [&](const char* key, const char* part_type) {
    std::string text;
    const json* parts = r.array(key);
    if (!parts) return text;
    for (size_t i = 0; i < parts->size(); ++i) {
      const std::string path = element_path(r.path(key), i);
      if (!(*parts)[i].is_object()) throw_wrong_type(path, "an object", (*parts)[i]);
      JsonReader part((*parts)[i], path);
      const std::string type = part.required_string("type");
      if (type != part_type)
        throw invalid_request("Invalid value for '" + part.path("type") + "': expected '" + part_type +
                                  "', got '" + excerpt(type) + "'.",
                              part.path("type"), "invalid_value");
      text += part.required_string("text");
    }
    return text;
  };
  item.text = texts("content", "reasoning_text");
  if (item.text.empty()) item.text = texts("summary", "summary_text");
  json stored = {{"type", "reasoning"}, {"summary", json::array()},
                 {"content", json::array({{{"type", "reasoning_text"}, {"text", item.text}}})}};
  keep_id(r, stored);
  out.input_items.push_back(std::move(stored));
  out.input.push_back(std::move(item));
}

void parse_items(const json& items, const std::string& items_path, ResponsesRequest& out) {
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string path = element_path(items_path, i);
    if (!items[i].is_object()) throw_wrong_type(path, "an object", items[i]);
    JsonReader item(items[i], path);
    const std::string type = item.string("type").value_or("message");
    if (type == "message") parse_message(item, out);
    else if (type == "function_call") parse_function_call(item, out);
    else if (type == "function_call_output") parse_function_call_output(item, out);
    else if (type == "reasoning") parse_reasoning(item, out);
    else
      throw invalid_request("Unsupported input item type '" + excerpt(type) + "' at '" + path +
                                "' (supported: message, function_call, function_call_output, reasoning).",
                            item.path("type"), "unsupported_value");
  }
}

void parse_input(const JsonReader& body, ResponsesRequest& out) {
  const json* input = body.find("input");
  if (!input) return;  // previous_response_id alone continues a conversation
  if (input->is_string()) {
    json message = {{"role", "user"}, {"content", *input}};
    parse_message(JsonReader(message, "input"), out);
    return;
  }
  if (!input->is_array()) throw_wrong_type("input", "a string or an array of items", *input);
  parse_items(*input, "input", out);
}

}  // namespace

std::vector<ConversationItem> parse_conversation_items(const json& items, const std::string& path) {
  if (!items.is_array()) throw_wrong_type(path, "an array of items", items);
  ResponsesRequest r;
  parse_items(items, path, r);
  return std::move(r.input);
}

ResponsesRequest parse_responses_request(std::string_view text) {
  const json body_json = parse_body(text);
  const JsonReader body(body_json, "");
  ResponsesRequest r;
  r.model = body.required_string("model");
  parse_input(body, r);
  r.setup.instructions = body.string("instructions");
  r.previous_response_id = body.string("previous_response_id");
  if (r.input.empty() && !r.previous_response_id)
    throw invalid_request("Missing required parameter: 'input'.", "input", "missing_required_parameter");

  parse_tools(body, false, r.setup);
  if (const json* tools = body.find("tools")) {
    r.tools_echo = *tools;
    // The API's FunctionTool always has `strict` (boolean or null).
    for (auto& tool : r.tools_echo)
      if (tool.is_object() && tool.value("type", "") == "function" && !tool.contains("strict")) tool["strict"] = nullptr;
  }
  parse_tool_choice(body, false, r.setup);
  if (const json* tc = body.find("tool_choice")) r.tool_choice_echo = *tc;
  r.setup.parallel_tool_calls = body.boolean("parallel_tool_calls").value_or(true);

  r.reasoning_echo = {{"effort", nullptr}, {"summary", nullptr}};
  if (auto reasoning = body.object("reasoning")) {
    if (auto effort = reasoning->string("effort")) {
      r.setup.effort = parse_effort(*effort, reasoning->path("effort"));
      r.reasoning_echo["effort"] = *effort;
    }
    if (auto summary = reasoning->string("summary")) r.reasoning_echo["summary"] = *summary;
  }
  r.text_echo = {{"format", {{"type", "text"}}}};
  if (auto text = body.object("text")) {
    if (auto format = text->object("format")) {
      r.setup.format = parse_response_format(*format);
      r.text_echo["format"] = format->value();
    }
    if (auto verbosity = text->string("verbosity")) r.text_echo["verbosity"] = *verbosity;
  }

  r.options.sampling = parse_sampling(body);
  r.options.max_tokens = body.integer("max_output_tokens", 1, INT32_MAX);
  r.options.max_tokens_param = "max_output_tokens";
  r.options.stop = parse_stop(body);
  r.options.max_reasoning_tokens = parse_max_reasoning_tokens(body);
  const auto top_logprobs = body.integer("top_logprobs", 0, 20);
  if (const json* include = body.array("include"))
    for (size_t i = 0; i < include->size(); ++i) {
      if (!(*include)[i].is_string()) throw_wrong_type(element_path("include", i), "a string", (*include)[i]);
      const std::string value = (*include)[i].get<std::string>();
      // The API's values (the others name outputs of tools this server does not run, or
      // encrypted reasoning it does not produce: nothing to add, but no mistake either).
      static const std::set<std::string> known = {
          "message.output_text.logprobs", "reasoning.encrypted_content", "file_search_call.results",
          "web_search_call.results", "web_search_call.action.sources", "message.input_image.image_url",
          "computer_call_output.output.image_url", "code_interpreter_call.outputs"};
      if (!known.count(value)) {
        std::string supported;
        for (const auto& k : known) supported += (supported.empty() ? "'" : ", '") + k + "'";
        throw invalid_request("Invalid value for '" + element_path("include", i) + "': '" + excerpt(value) +
                                  "'. Supported values are: " + supported + ".",
                              element_path("include", i), "invalid_value");
      }
      if (value == "message.output_text.logprobs") r.include_logprobs = true;
    }
  if (r.include_logprobs || top_logprobs) r.options.sampling.logprobs = int(top_logprobs.value_or(0));

  r.store = body.boolean("store").value_or(true);
  r.stream = body.boolean("stream").value_or(false);
  if (body.boolean("background").value_or(false))
    throw invalid_request("Unsupported value for 'background': background responses are not supported.",
                          "background", "unsupported_value");
  if (auto metadata = body.object("metadata")) {
    if (metadata->value().size() > 16)
      throw invalid_request("Invalid 'metadata': at most 16 keys are allowed.", "metadata", "invalid_value");
    for (const auto& [key, value] : metadata->value().items()) {
      if (!value.is_string()) throw_wrong_type(metadata->path(key), "a string", value);
      if (key.size() > 64 || value.get_ref<const std::string&>().size() > 512)
        throw invalid_request("Invalid 'metadata': keys are at most 64 characters and values at most 512.",
                              metadata->path(key), "invalid_value");
    }
    r.metadata = metadata->value();
  }
  if (auto truncation = body.string("truncation")) {
    if (*truncation != "auto" && *truncation != "disabled")
      throw invalid_request("Invalid value for 'truncation': expected 'auto' or 'disabled'.", "truncation",
                            "invalid_value");
    r.truncation = *truncation;
  }
  if (auto user = body.string("user")) r.user = *user;
  return r;
}

}  // namespace gptoss_server
