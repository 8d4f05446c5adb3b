// spec_json of gptoss_grammar_create_harmony -> HarmonySpec. Every error names the field.
#include <algorithm>

#include "libgptoss/common/error.hpp"
#include "libgptoss/constrain/harmony_grammar.hpp"
#include "libgptoss/harmony/message_json.hpp"

namespace gptoss::constrain {
namespace {

using harmony::Json;

[[noreturn]] void bad(const std::string& path, std::string_view why) {
  fail(gptoss_status_invalid_argument, "{}: {}", path, why);
}

void check_keys(const Json& j, const std::string& path, std::initializer_list<std::string_view> keys) {
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) bad(path + "." + it.key(), "unknown field");
}

// A channel or a recipient goes into a header between spaces and special tokens.
void check_header_word(const std::string& word, const std::string& path) {
  if (word.empty()) bad(path, "must not be empty");
  for (char c : word)
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '<')
      bad(path, "must not contain whitespace or '<' (\"" + word + "\")");
}

std::string named_tool(const Json& choice, const std::string& path) {
  check_keys(choice, path, {"type", "name", "function"});
  if (choice.contains("type") && choice["type"] != "function") bad(path + ".type", "expected \"function\"");
  const Json* name = nullptr;
  if (choice.contains("name")) name = &choice["name"];
  else if (choice.contains("function") && choice["function"].is_object() && choice["function"].contains("name"))
    name = &choice["function"]["name"];
  if (name == nullptr || !name->is_string())
    bad(path, "expected \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"name\": NAME}");
  return name->get<std::string>();
}

std::optional<Json> parse_response_format(const Json& format, const std::string& path) {
  if (!format.is_object()) bad(path, "expected an object");
  check_keys(format, path, {"type", "schema", "json_schema", "name", "description", "strict"});
  if (!format.contains("type") || !format["type"].is_string()) bad(path + ".type", "expected a string");
  const std::string type = format["type"].get<std::string>();
  if (type == "text") return std::nullopt;
  if (type == "json_object") return Json{{"type", "object"}};
  if (type != "json_schema") bad(path + ".type", "expected \"text\", \"json_object\" or \"json_schema\"");
  if (format.contains("schema")) return format["schema"];
  if (format.contains("json_schema") && format["json_schema"].is_object() && format["json_schema"].contains("schema"))
    return format["json_schema"]["schema"];
  bad(path, "\"json_schema\" needs a \"schema\" (or \"json_schema\": {\"schema\": ...})");
}

}  // namespace

HarmonySpec HarmonySpec::from_json(const Json& j, const std::string& path) {
  HarmonySpec spec;
  if (j.is_null()) return spec;
  if (!j.is_object()) bad(path, "expected an object");
  check_keys(j, path, {"channels", "tools", "tool_choice", "response_format", "start", "parallel_tool_calls"});
  if (j.contains("channels")) {
    const Json& c = j["channels"];
    if (!c.is_array() || c.empty()) bad(path + ".channels", "expected a non-empty array of strings");
    spec.channels.clear();
    for (size_t i = 0; i < c.size(); ++i) {
      const std::string p = path + ".channels[" + std::to_string(i) + "]";
      if (!c[i].is_string()) bad(p, "expected a string");
      check_header_word(c[i].get<std::string>(), p);
      spec.channels.push_back(c[i].get<std::string>());
    }
  }
  if (j.contains("tools") && !j["tools"].is_null()) {
    spec.tools = harmony::namespaces_from_json(j["tools"], path + ".tools");
    for (const auto& [key, ns] : spec.tools) {
      check_header_word(ns.name, path + ".tools." + key + ".name");
      for (size_t i = 0; i < ns.tools.size(); ++i)
        check_header_word(ns.tools[i].name, path + ".tools." + key + ".tools[" + std::to_string(i) + "].name");
    }
  }
  if (j.contains("tool_choice")) {
    const Json& c = j["tool_choice"];
    const std::string p = path + ".tool_choice";
    if (c == "auto") spec.tool_choice = ToolChoice::automatic;
    else if (c == "none") spec.tool_choice = ToolChoice::none;
    else if (c == "required") spec.tool_choice = ToolChoice::required;
    else if (c.is_object()) {
      spec.tool_choice = ToolChoice::named;
      const std::string name = named_tool(c, p);
      spec.named_recipient = name.find('.') == std::string::npos ? "functions." + name : name;
      bool declared = false;
      for (const auto& [key, ns] : spec.tools)
        for (const auto& t : ns.tools) declared = declared || ns.name + "." + t.name == spec.named_recipient;
      if (!declared) bad(p, "no tool \"" + name + "\" is declared in \"tools\"");
    } else {
      bad(p, "expected \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"name\": NAME}");
    }
  }
  if (spec.tool_choice == ToolChoice::required && spec.tools.empty())
    bad(path + ".tool_choice", "\"required\" but no tools are declared");
  if (j.contains("response_format") && !j["response_format"].is_null())
    spec.final_schema = parse_response_format(j["response_format"], path + ".response_format");
  if (j.contains("start")) {
    if (j["start"] == "header") spec.start_in_header = true;
    else if (j["start"] == "message") spec.start_in_header = false;
    else bad(path + ".start", "expected \"header\" or \"message\"");
  }
  if (j.contains("parallel_tool_calls")) {
    if (!j["parallel_tool_calls"].is_boolean()) bad(path + ".parallel_tool_calls", "expected true or false");
    spec.parallel_tool_calls = j["parallel_tool_calls"].get<bool>();
  }
  const bool needs_call = spec.tool_choice == ToolChoice::required || spec.tool_choice == ToolChoice::named;
  if (needs_call && std::all_of(spec.channels.begin(), spec.channels.end(), [](const auto& c) { return c == "final"; }))
    bad(path + ".channels", "a required tool call needs a channel other than \"final\"");
  return spec;
}

}  // namespace gptoss::constrain
