#pragma once
// What a request asks for, once parsed: the same shapes for every endpoint. Parsing (the
// parse_*_request functions) is a pure function of the body; resolving a stored history,
// rendering and tokenizing come after (ServerContext::harmony_spec, http/server_context.hpp).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/generation.hpp"

namespace gptoss_server {

using nlohmann::json;

enum class ReasoningEffort { low, medium, high };
const char* effort_name(ReasoningEffort effort);

// A function the model may call (other tool types are skipped, see skipped_tools).
struct FunctionTool {
  std::string name;
  std::string description;
  json parameters;  // a JSON Schema object, or null
  bool strict = false;
};

struct ToolChoice {
  enum class Mode { automatic, none, required, function };
  Mode mode = Mode::automatic;
  std::string name;  // Mode::function
};

struct ResponseFormat {
  enum class Type { text, json_object, json_schema };
  Type type = Type::text;
  std::string name;
  std::string description;
  json schema;  // json_schema
  bool strict = false;
};

// One turn of a conversation, however the endpoint spelled it.
struct ConversationItem {
  enum class Kind { message, reasoning, function_call, function_call_output };
  Kind kind = Kind::message;
  std::string role;     // message: system | developer | user | assistant
  bool preamble = false;  // assistant message on the commentary channel (not the final answer)
  std::string text;     // message text, reasoning text, call arguments, call output
  std::string call_id;  // function_call, function_call_output
  std::string name;     // function_call
};

// Generation limits and constraints every endpoint shares.
struct GenerationOptions {
  Sampling sampling;
  std::optional<int64_t> max_tokens;
  std::string max_tokens_param;  // the field that gave max_tokens, for errors that name it
  std::vector<std::string> stop;
  std::optional<int64_t> max_reasoning_tokens;
};

// What the model is told and held to (Harmony endpoints).
struct ChatSetup {
  std::optional<std::string> instructions;
  std::vector<FunctionTool> tools;
  std::vector<std::string> skipped_tools;  // types of tools not offered to the model
  ToolChoice tool_choice;
  bool parallel_tool_calls = true;
  std::optional<ReasoningEffort> effort;
  ResponseFormat format;
};

struct ResponsesRequest {
  std::string model;
  json input_items = json::array();  // the request's input as Responses items (no ids yet)
  std::vector<ConversationItem> input;
  ChatSetup setup;
  GenerationOptions options;
  bool include_logprobs = false;
  bool store = true;
  std::optional<std::string> previous_response_id;
  bool stream = false;
  // Echoed in the Response object as given.
  json tools_echo = json::array();
  json tool_choice_echo = "auto";
  json text_echo;
  json reasoning_echo;
  json metadata;
  json truncation = "disabled";
  json user;
};

struct ChatRequest {
  std::string model;
  std::vector<ConversationItem> messages;
  ChatSetup setup;
  GenerationOptions options;
  int n = 1;
  bool stream = false;
  bool include_usage = false;
};

struct CompletionPrompt {
  std::optional<std::string> text;  // text, or else tokens
  std::vector<uint32_t> tokens;
};

struct CompletionsRequest {
  std::string model;
  std::vector<CompletionPrompt> prompts;
  GenerationOptions options;
  int n = 1;
  bool echo = false;
  bool stream = false;
  bool include_usage = false;
};

// Throw ApiError (400) for malformed JSON, wrong types and unsupported values, naming the
// parameter. Unknown fields are ignored.
ResponsesRequest parse_responses_request(std::string_view body);
// Responses items (input or output items, e.g. a stored conversation) as conversation turns.
std::vector<ConversationItem> parse_conversation_items(const json& items, const std::string& path);
ChatRequest parse_chat_request(std::string_view body);
CompletionsRequest parse_completions_request(std::string_view body);

}  // namespace gptoss_server
