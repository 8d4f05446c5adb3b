#pragma once
// Parsing shared by the endpoints: sampling, stop, tools, tool_choice, formats, content.
#include <string>
#include <vector>

#include "api/json_reader.hpp"
#include "api/request.hpp"

namespace gptoss_server {

// temperature, top_p, seed, presence_penalty, frequency_penalty.
Sampling parse_sampling(const JsonReader& body);
// `stop`: a string or up to 4 strings; empty strings are dropped.
std::vector<std::string> parse_stop(const JsonReader& body);
// `stream`, and `stream_options.include_usage` (only allowed with stream: true).
bool parse_stream(const JsonReader& body, bool* include_usage);
// max_reasoning_tokens (extension).
std::optional<int64_t> parse_max_reasoning_tokens(const JsonReader& body);

// {name, description, parameters, strict} (the Responses tool, or Chat's tool.function).
FunctionTool parse_function_tool(const JsonReader& tool);
// Adds the function tools of a `tools` array; `nested` = Chat's {type, function: {...}}.
// Other types are recorded in setup.skipped_tools.
void parse_tools(const JsonReader& body, bool nested, ChatSetup& setup);
// "auto" | "none" | "required" | {type: "function", name} (Responses) or
// {type: "function", function: {name}} (Chat); checked against the tools.
void parse_tool_choice(const JsonReader& body, bool nested, ChatSetup& setup);
// {type: text | json_object | json_schema, name?, schema?, description?, strict?}
ResponseFormat parse_response_format(const JsonReader& format);
ReasoningEffort parse_effort(const std::string& value, const std::string& path);

// The text of a message's content: a string, or parts of the text kinds (input_text,
// output_text, text, refusal) concatenated. Other kinds (images, files, audio) -> 400.
std::string content_text(const json& content, const std::string& path);

}  // namespace gptoss_server
