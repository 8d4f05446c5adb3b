#include "api/harmony_conversation.hpp"

#include <ctime>
#include <map>

#include "api/api_error.hpp"

namespace gptoss_server {
namespace {

json system_message(const ChatSetup& setup, const std::string& date) {
  json content = {{"type", "system_content"},
                  {"model_identity", "You are ChatGPT, a large language model trained by OpenAI."},
                  {"reasoning_effort", effort_name(setup.effort.value_or(ReasoningEffort::medium))},
                  {"conversation_start_date", date},
                  {"knowledge_cutoff", "2024-06"},
                  {"channel_config",
                   {{"valid_channels", {"analysis", "commentary", "final"}}, {"channel_required", true}}}};
  return {{"role", "system"}, {"content", json::array({content})}};
}

// The function tools as a Harmony namespace: the developer message declares them, the
// constraint grammar allows calls to them.
json functions_namespace(const std::vector<FunctionTool>& functions) {
  json tools = json::array();
  for (const auto& t : functions) {
    json tool = {{"name", t.name}, {"description", t.description}};
    if (!t.parameters.is_null()) tool["parameters"] = t.parameters;
    tools.push_back(std::move(tool));
  }
  return {{"functions", {{"name", "functions"}, {"tools", std::move(tools)}}}};
}

// Instructions, tools and the response format; null when there is none of them.
json developer_message(const ChatSetup& setup, const std::string& instructions) {
  json content = {{"type", "developer_content"}};
  if (!instructions.empty()) content["instructions"] = instructions;
  if (!setup.tools.empty()) content["tools"] = functions_namespace(setup.tools);
  const ResponseFormat& f = setup.format;
  if (f.type == ResponseFormat::Type::json_schema) {
    json format = {{"name", f.name}, {"schema", f.schema}};
    if (!f.description.empty()) format["description"] = f.description;
    content["response_formats"] = json::array({format});
  } else if (f.type == ResponseFormat::Type::json_object) {
    content["response_formats"] = json::array(
        {{{"name", "json_object"}, {"description", "Any JSON object."}, {"schema", {{"type", "object"}}}}});
  }
  if (content.size() == 1) return nullptr;
  return {{"role", "developer"}, {"content", json::array({content})}};
}

}  // namespace

json harmony_conversation(const ChatSetup& setup, const std::vector<ConversationItem>& items,
                          const std::string& date, const char* items_param) {
  using Kind = ConversationItem::Kind;
  // System and developer messages before the first other turn are the developer message's
  // instructions, after the request's own instructions.
  std::string instructions = setup.instructions.value_or("");
  size_t first = 0;
  for (; first < items.size(); ++first) {
    const auto& item = items[first];
    if (item.kind != Kind::message || (item.role != "system" && item.role != "developer")) break;
    if (!instructions.empty() && !item.text.empty()) instructions += "\n\n";
    instructions += item.text;
  }

  json messages = json::array({system_message(setup, date)});
  if (json dev = developer_message(setup, instructions); !dev.is_null()) messages.push_back(std::move(dev));

  std::map<std::string, std::string> call_names;  // call_id -> function name
  for (size_t i = first; i < items.size(); ++i) {
    const auto& item = items[i];
    switch (item.kind) {
      case Kind::message:
        if (item.role == "assistant")
          messages.push_back({{"role", "assistant"}, {"channel", item.preamble ? "commentary" : "final"},
                              {"content", item.text}});
        else if (item.role == "user")
          messages.push_back({{"role", "user"}, {"content", item.text}});
        else  // a later system or developer message: instructions where it stands
          messages.push_back({{"role", "developer"},
                              {"content", json::array({{{"type", "developer_content"}, {"instructions", item.text}}})}});
        break;
      case Kind::reasoning:
        messages.push_back({{"role", "assistant"}, {"channel", "analysis"}, {"content", item.text}});
        break;
      case Kind::function_call:
        call_names[item.call_id] = item.name;
        messages.push_back({{"role", "assistant"}, {"recipient", "functions." + item.name},
                            {"channel", "commentary"}, {"content_type", "<|constrain|>json"},
                            {"content", item.text}});
        break;
      case Kind::function_call_output: {
        auto it = call_names.find(item.call_id);
        if (it == call_names.end())
          throw invalid_request("No tool call found for function call output with call_id '" + excerpt(item.call_id) +
                                    "'.",
                                items_param, "invalid_value");
        messages.push_back({{"role", "tool"}, {"name", "functions." + it->second}, {"recipient", "assistant"},
                            {"channel", "commentary"}, {"content", item.text}});
        break;
      }
    }
  }
  return {{"messages", std::move(messages)}};
}

json constraint_spec(const ChatSetup& setup) {
  json spec = {{"channels", {"analysis", "commentary", "final"}}};
  if (!setup.tools.empty()) spec["tools"] = functions_namespace(setup.tools);
  spec["parallel_tool_calls"] = setup.parallel_tool_calls;
  switch (setup.tool_choice.mode) {
    case ToolChoice::Mode::automatic: spec["tool_choice"] = "auto"; break;
    case ToolChoice::Mode::none: spec["tool_choice"] = "none"; break;
    case ToolChoice::Mode::required: spec["tool_choice"] = "required"; break;
    case ToolChoice::Mode::function: spec["tool_choice"] = {{"type", "function"}, {"name", setup.tool_choice.name}}; break;
  }
  switch (setup.format.type) {
    case ResponseFormat::Type::text: spec["response_format"] = {{"type", "text"}}; break;
    case ResponseFormat::Type::json_object: spec["response_format"] = {{"type", "json_object"}}; break;
    case ResponseFormat::Type::json_schema:
      spec["response_format"] = {{"type", "json_schema"}, {"schema", setup.format.schema}};
      break;
  }
  return spec;
}

std::string utc_date_today() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

}  // namespace gptoss_server
