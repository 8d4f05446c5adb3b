#include "api/parse_common.hpp"

#include <cctype>
#include <set>

#include "api/api_error.hpp"

namespace gptoss_server {

const char* effort_name(ReasoningEffort effort) {
  switch (effort) {
    case ReasoningEffort::low: return "low";
    case ReasoningEffort::high: return "high";
    default: return "medium";
  }
}

Sampling parse_sampling(const JsonReader& body) {
  Sampling s;
  if (auto t = body.number("temperature", 0.0, 2.0)) s.temperature = *t;
  if (auto p = body.number("top_p", 0.0, 1.0)) {
    // The sampler needs top_p in (0, 1]; 0 means "only the most likely token".
    if (*p == 0.0) s.temperature = 0.0;
    else s.top_p = *p;
  }
  if (auto p = body.number("presence_penalty", -2.0, 2.0)) s.presence_penalty = *p;
  if (auto p = body.number("frequency_penalty", -2.0, 2.0)) s.frequency_penalty = *p;
  if (auto seed = body.integer("seed", INT64_MIN, INT64_MAX)) s.seed = uint64_t(*seed);
  // The library's sampler has no per-token bias: a non-empty logit_bias is refused rather than
  // ignored, since it would change what the client gets.
  if (const json* bias = body.find("logit_bias"); bias && !bias->is_null()) {
    if (!bias->is_object()) throw_wrong_type(body.path("logit_bias"), "an object", *bias);
    if (!bias->empty())
      throw invalid_request("Unsupported parameter: 'logit_bias' is not supported by this server.",
                            body.path("logit_bias"), "unsupported_parameter");
  }
  return s;
}

std::vector<std::string> parse_stop(const JsonReader& body) {
  std::vector<std::string> stop;
  for (auto& s : body.string_or_strings("stop", 4)) {
    if (s.size() > 1024)
      throw invalid_request("Invalid 'stop': a stop string is at most 1024 bytes.", "stop", "invalid_value");
    if (!s.empty()) stop.push_back(std::move(s));
  }
  return stop;
}

bool parse_stream(const JsonReader& body, bool* include_usage) {
  const bool stream = body.boolean("stream").value_or(false);
  if (auto options = body.object("stream_options")) {
    if (!stream)
      throw invalid_request("The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                            "stream_options", "invalid_value");
    *include_usage = options->boolean("include_usage").value_or(false);
  }
  return stream;
}

std::optional<int64_t> parse_max_reasoning_tokens(const JsonReader& body) {
  return body.integer("max_reasoning_tokens", 0, INT32_MAX);
}

namespace {

// A tool or format name: OpenAI's rule, which also keeps Harmony headers unambiguous
// (`to=functions.NAME`).
std::string required_name(const JsonReader& r) {
  std::string name = r.required_string("name");
  bool valid = !name.empty() && name.size() <= 64;
  for (unsigned char c : name) valid = valid && (std::isalnum(c) || c == '_' || c == '-');
  if (!valid)
    throw invalid_request("Invalid '" + r.path("name") + "': '" + excerpt(name) + "' does not match '^[a-zA-Z0-9_-]{1,64}$'.",
                          r.path("name"), "invalid_value");
  return name;
}

// The parts of a JSON Schema the prompt renderer and the constraint compiler read: wrong
// types here are the client's mistake, reported before anything is rendered. `code`: the
// error code of whose schema it is (a function's parameters, a response format).
void check_schema_shape(const json& schema, const std::string& path, const char* code) {
  if (!schema.is_object()) throw_wrong_type(path, "a JSON Schema object", schema);
  if (auto it = schema.find("type"); it != schema.end() && !it->is_string() && !it->is_array())
    throw invalid_request("Invalid schema at '" + path + ".type': expected a string or an array.",
                          path + ".type", code);
  if (auto it = schema.find("properties"); it != schema.end()) {
    if (!it->is_object())
      throw invalid_request("Invalid schema at '" + path + ".properties': expected an object.",
                            path + ".properties", code);
    for (const auto& [key, sub] : it->items()) check_schema_shape(sub, path + ".properties." + key, code);
  }
  if (auto it = schema.find("required"); it != schema.end()) {
    if (!it->is_array())
      throw invalid_request("Invalid schema at '" + path + ".required': expected an array of strings.",
                            path + ".required", code);
    for (const auto& r : *it)
      if (!r.is_string())
        throw invalid_request("Invalid schema at '" + path + ".required': expected an array of strings.",
                              path + ".required", code);
  }
  if (auto it = schema.find("items"); it != schema.end() && it->is_object())
    check_schema_shape(*it, path + ".items", code);
}

}  // namespace

FunctionTool parse_function_tool(const JsonReader& tool) {
  FunctionTool t;
  t.name = required_name(tool);
  t.description = tool.string("description").value_or("");
  if (const json* p = tool.find("parameters")) {
    check_schema_shape(*p, tool.path("parameters"), "invalid_function_parameters");
    // Arguments are a JSON object (the model writes them so, and OpenAI refuses other types).
    if (auto type = p->find("type"); type != p->end() && *type != "object")
      throw invalid_request("Invalid schema for function '" + t.name + "': the parameters must be a JSON Schema of "
                                "'type: \"object\"', got 'type: " + excerpt(type->dump()) + "'.",
                            tool.path("parameters") + ".type", "invalid_function_parameters");
    t.parameters = *p;
  }
  t.strict = tool.boolean("strict").value_or(false);
  return t;
}

void parse_tools(const JsonReader& body, bool nested, ChatSetup& setup) {
  const json* tools = body.array("tools");
  if (!tools) return;
  std::set<std::string> names;
  for (size_t i = 0; i < tools->size(); ++i) {
    const std::string path = element_path(body.path("tools"), i);
    const json& item = (*tools)[i];
    if (!item.is_object()) throw_wrong_type(path, "an object", item);
    JsonReader tool(item, path);
    const std::string type = tool.required_string("type");
    if (type != "function") {
      setup.skipped_tools.push_back(type);
      continue;
    }
    FunctionTool t;
    if (nested) {
      auto fn = tool.object("function");
      if (!fn)
        throw invalid_request("Missing required parameter: '" + tool.path("function") + "'.",
                              tool.path("function"), "missing_required_parameter");
      t = parse_function_tool(*fn);
    } else {
      t = parse_function_tool(tool);
    }
    if (!names.insert(t.name).second)
      throw invalid_request("Duplicate tool name '" + t.name + "' in 'tools'.", path, "invalid_value");
    setup.tools.push_back(std::move(t));
  }
}

void parse_tool_choice(const JsonReader& body, bool nested, ChatSetup& setup) {
  const json* choice = body.find("tool_choice");
  if (!choice) return;
  const std::string path = body.path("tool_choice");
  ToolChoice& tc = setup.tool_choice;
  if (choice->is_string()) {
    const std::string s = choice->get<std::string>();
    if (s == "auto") tc.mode = ToolChoice::Mode::automatic;
    else if (s == "none") tc.mode = ToolChoice::Mode::none;
    else if (s == "required") tc.mode = ToolChoice::Mode::required;
    else
      throw invalid_request("Invalid value for '" + path + "': expected 'auto', 'none', 'required' "
                            "or a function, got '" + excerpt(s) + "'.", path, "invalid_value");
  } else if (choice->is_object()) {
    JsonReader r(*choice, path);
    const std::string type = r.required_string("type");
    if (type != "function")
      throw invalid_request("Unsupported value for '" + r.path("type") + "': '" + excerpt(type) +
                                "' (only function tools are offered to this model).",
                            r.path("type"), "unsupported_value");
    if (nested) {
      auto fn = r.object("function");
      if (!fn)
        throw invalid_request("Missing required parameter: '" + r.path("function") + "'.",
                              r.path("function"), "missing_required_parameter");
      tc.name = fn->required_string("name");
    } else {
      tc.name = r.required_string("name");
    }
    tc.mode = ToolChoice::Mode::function;
  } else {
    throw_wrong_type(path, "a string or an object", *choice);
  }
  if (tc.mode == ToolChoice::Mode::function) {
    bool found = false;
    for (const auto& t : setup.tools) found = found || t.name == tc.name;
    if (!found)
      throw invalid_request("Tool choice '" + excerpt(tc.name) + "' not found in 'tools' parameter.", path,
                            "invalid_value");
  }
  if (tc.mode == ToolChoice::Mode::required && setup.tools.empty())
    throw invalid_request("tool_choice 'required' needs at least one function tool in 'tools'.", path,
                          "invalid_value");
}

ResponseFormat parse_response_format(const JsonReader& format) {
  ResponseFormat f;
  const std::string type = format.required_string("type");
  if (type == "text") return f;
  if (type == "json_object") {
    f.type = ResponseFormat::Type::json_object;
    return f;
  }
  if (type != "json_schema")
    throw invalid_request("Invalid value for '" + format.path("type") +
                              "': expected 'text', 'json_object' or 'json_schema', got '" + excerpt(type) + "'.",
                          format.path("type"), "invalid_value");
  f.type = ResponseFormat::Type::json_schema;
  f.name = required_name(format);
  f.description = format.string("description").value_or("");
  const json* schema = format.find("schema");
  if (!schema)
    throw invalid_request("Missing required parameter: '" + format.path("schema") + "'.",
                          format.path("schema"), "missing_required_parameter");
  check_schema_shape(*schema, format.path("schema"), "invalid_response_format");
  f.schema = *schema;
  f.strict = format.boolean("strict").value_or(false);
  return f;
}

ReasoningEffort parse_effort(const std::string& value, const std::string& path) {
  if (value == "low") return ReasoningEffort::low;
  if (value == "medium") return ReasoningEffort::medium;
  if (value == "high") return ReasoningEffort::high;
  throw invalid_request("Unsupported value for '" + path + "': '" + excerpt(value) +
                            "' (gpt-oss reasons at 'low', 'medium' or 'high').",
                        path, "unsupported_value");
}

std::string content_text(const json& content, const std::string& path) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw_wrong_type(path, "a string or an array of content parts", content);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string part_path = element_path(path, i);
    const json& part = content[i];
    if (!part.is_object()) throw_wrong_type(part_path, "an object", part);
    JsonReader r(part, part_path);
    const std::string type = r.required_string("type");
    if (type == "input_text" || type == "output_text" || type == "text") text += r.required_string("text");
    else if (type == "refusal") text += r.required_string("refusal");
    else
      throw invalid_request("Unsupported content part type '" + excerpt(type) + "' at '" + part_path +
                                "': this model reads text only.",
                            r.path("type"), "unsupported_value");
  }
  return text;
}

}  // namespace gptoss_server
