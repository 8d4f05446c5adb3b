// Every system-content field is spelled out rather than left to library defaults, so the
// rendered prompt is exactly what this file says.
#include "conversation.hpp"

#include <fstream>
#include <sstream>

namespace gptoss_cli {
namespace {
constexpr const char* kDefaultIdentity = "You are ChatGPT, a large language model trained by OpenAI.";

nlohmann::ordered_json text_message(const char* role, const std::string& text) {
  return {{"role", role}, {"content", {{{"type", "text"}, {"text", text}}}}};
}
}  // namespace

Conversation::Conversation(const Options& options)
    : model_identity_(options.system.empty() ? kDefaultIdentity : options.system),
      reasoning_effort_(options.reasoning_effort),
      developer_(options.developer),
      json_schema_(options.harmony ? options.json_schema : "") {
  reset();
}

nlohmann::ordered_json Conversation::initial_messages() const {
  nlohmann::ordered_json system_content = {
      {"type", "system_content"},
      {"model_identity", model_identity_},
      {"reasoning_effort", reasoning_effort_},
      {"knowledge_cutoff", "2024-06"},
      {"channel_config",
       {{"valid_channels", {"analysis", "commentary", "final"}}, {"channel_required", true}}}};
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  messages.push_back({{"role", "system"}, {"content", {system_content}}});
  nlohmann::ordered_json developer = {{"type", "developer_content"}};
  if (!developer_.empty()) developer["instructions"] = developer_;
  if (!json_schema_.empty())
    developer["response_formats"] = {{{"name", "response"}, {"schema", nlohmann::ordered_json::parse(json_schema_)}}};
  if (developer.size() > 1) messages.push_back({{"role", "developer"}, {"content", {developer}}});
  return messages;
}

void Conversation::reset() { messages_ = initial_messages(); }

void Conversation::add_user(const std::string& text) {
  messages_.push_back(text_message("user", text));
}

void Conversation::add_parsed(const std::string& messages_json) {
  for (auto& message : nlohmann::ordered_json::parse(messages_json)) messages_.push_back(message);
}

void Conversation::pop_last() {
  if (!messages_.empty()) messages_.erase(messages_.end() - 1);
}

std::string Conversation::to_json() const { return nlohmann::ordered_json{{"messages", messages_}}.dump(); }

void Conversation::save(const std::string& path) const {
  std::ofstream out(path);
  out << nlohmann::ordered_json{{"messages", messages_}}.dump(2) << "\n";
  out.close();
  if (!out) throw UsageError("cannot write " + path);
}

void Conversation::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) throw UsageError(path + " is not valid JSON");
  if (doc.is_object() && doc.contains("messages")) doc = doc["messages"];
  if (!doc.is_array()) throw UsageError(path + ": expected {\"messages\": [...]} or an array");
  for (const auto& message : doc) {
    if (!message.is_object() || !message.contains("role") || !message["role"].is_string())
      throw UsageError(path + ": every message needs a \"role\"");
  }
  messages_ = std::move(doc);
}

}  // namespace gptoss_cli
