#pragma once
// The Harmony conversation model: messages with an author, optional recipient / channel /
// content type, and content parts (plain text, system content, developer content).
// Field meanings follow docs/harmony.md; std::nullopt always means "not set".
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace gptoss::harmony {

// JSON Schemas keep their key order (properties render in document order).
using Json = nlohmann::ordered_json;

enum class Role { system, developer, user, assistant, tool };

std::string_view role_name(Role role);
std::optional<Role> role_from_name(std::string_view name);

struct Tool {
  std::string name;
  std::string description;
  std::optional<Json> parameters;  // a JSON Schema object; nullopt = no arguments
};

struct Namespace {
  std::string name;
  std::optional<std::string> description;
  std::vector<Tool> tools;
};

// Keyed and therefore rendered in byte order of the key (the namespace's name).
using ToolNamespaces = std::map<std::string, Namespace>;

struct ChannelConfig {
  std::vector<std::string> valid_channels;
  bool channel_required = false;
};

enum class ReasoningEffort { low, medium, high };

struct SystemContent {
  std::optional<std::string> model_identity;
  std::optional<ReasoningEffort> reasoning_effort;
  std::optional<std::string> conversation_start_date;
  std::optional<std::string> knowledge_cutoff;
  std::optional<ChannelConfig> channel_config;
  std::optional<ToolNamespaces> tools;
};

// Structured output (format guide only; openai-harmony 0.0.8 has no such field).
struct ResponseFormat {
  std::string name;
  std::optional<std::string> description;
  Json schema;
};

struct DeveloperContent {
  std::optional<std::string> instructions;
  std::optional<ToolNamespaces> tools;
  std::vector<ResponseFormat> response_formats;
};

struct TextContent {
  std::string text;
};

using ContentPart = std::variant<TextContent, SystemContent, DeveloperContent>;

struct Message {
  Role role = Role::user;
  std::optional<std::string> name;  // author name; the tool's name for Role::tool
  std::optional<std::string> recipient;
  std::optional<std::string> channel;
  std::optional<std::string> content_type;
  std::vector<ContentPart> content;

  static Message text(Role role, std::string text);
};

}  // namespace gptoss::harmony
