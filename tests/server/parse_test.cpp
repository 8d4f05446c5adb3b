// Request parsing of the three endpoints: what a body becomes, and the 400 each mistake gets
// (with the parameter's path). Parsing is a pure function of the body.
#include <catch2/catch.hpp>

#include "api/api_error.hpp"
#include "api/request.hpp"

using namespace gptoss_server;

namespace {

// The ApiError a body gets from `parse`, or a failed check if it parses.
template <typename Parse>
ApiError error_of(Parse parse, const std::string& body) {
  try {
    parse(body);
  } catch (const ApiError& e) {
    return e;
  }
  FAIL("parsed without an error: " << body);
  return server_error("unreachable");
}

}  // namespace

TEST_CASE("responses: a full request maps onto the internal shape", "[server][parse]") {
  const auto r = parse_responses_request(R"({
    "model": "m", "instructions": "Be brief.", "unknown_field": {"ignored": true},
    "input": [
      {"role": "user", "content": "Hi"},
      {"type": "message", "role": "assistant", "phase": "commentary", "content": [{"type": "output_text", "text": "Let me check."}]},
      {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "think"}]},
      {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}", "id": "fc_9"},
      {"type": "function_call_output", "call_id": "call_1", "output": [{"type": "input_text", "text": "42"}]}
    ],
    "tools": [{"type": "function", "name": "f", "parameters": {"type": "object", "properties": {}}},
              {"type": "web_search_preview"}, {"type": "custom", "name": "patch"}],
    "tool_choice": {"type": "function", "name": "f"}, "parallel_tool_calls": false,
    "reasoning": {"effort": "high", "summary": "auto"},
    "text": {"format": {"type": "json_schema", "name": "out", "schema": {"type": "object"}, "strict": true}},
    "max_output_tokens": 100, "temperature": 0.5, "top_p": 0.9, "seed": -3, "stop": "END",
    "max_reasoning_tokens": 64, "top_logprobs": 3, "include": ["message.output_text.logprobs"],
    "store": false, "previous_response_id": "resp_x", "metadata": {"k": "v"}, "stream": true})");
  CHECK(r.model == "m");
  CHECK(r.setup.instructions == "Be brief.");
  REQUIRE(r.input.size() == 5);
  CHECK(r.input[0].role == "user");
  CHECK(r.input[1].preamble);
  CHECK(r.input[2].kind == ConversationItem::Kind::reasoning);
  CHECK(r.input[2].text == "think");
  CHECK(r.input[3].name == "f");
  CHECK(r.input[4].text == "42");
  CHECK(r.input_items[3]["id"] == "fc_9");
  CHECK_FALSE(r.input_items[0].contains("id"));
  CHECK(r.input_items[1]["phase"] == "commentary");
  REQUIRE(r.setup.tools.size() == 1);
  CHECK(r.setup.skipped_tools == std::vector<std::string>{"web_search_preview", "custom"});
  CHECK(r.tools_echo.size() == 3);
  CHECK(r.tools_echo[0].contains("strict"));  // the API's FunctionTool always has it
  CHECK(r.tools_echo[0]["strict"].is_null());
  CHECK_FALSE(r.tools_echo[1].contains("strict"));  // other tools are echoed as sent
  CHECK(r.setup.tool_choice.mode == ToolChoice::Mode::function);
  CHECK_FALSE(r.setup.parallel_tool_calls);
  CHECK(r.setup.effort == ReasoningEffort::high);
  CHECK(r.setup.format.type == ResponseFormat::Type::json_schema);
  CHECK(r.setup.format.name == "out");
  CHECK(r.options.max_tokens == 100);
  CHECK(r.options.sampling.temperature == 0.5);
  CHECK(r.options.sampling.seed == uint64_t(int64_t(-3)));
  CHECK(r.options.stop == std::vector<std::string>{"END"});
  CHECK(r.options.max_reasoning_tokens == 64);
  CHECK(r.options.sampling.logprobs == 3);
  CHECK(r.include_logprobs);
  CHECK_FALSE(r.store);
  CHECK(r.previous_response_id == "resp_x");
  CHECK(r.stream);
}

TEST_CASE("responses: a string input is one user message; defaults", "[server][parse]") {
  const auto r = parse_responses_request(R"({"model": "m", "input": "Hello"})");
  REQUIRE(r.input.size() == 1);
  CHECK(r.input[0].role == "user");
  CHECK(r.input[0].text == "Hello");
  CHECK(r.input_items[0]["content"][0]["type"] == "input_text");
  CHECK(r.store);
  CHECK_FALSE(r.stream);
  CHECK(r.options.sampling.logprobs == -1);
  CHECK_FALSE(r.options.max_tokens);
  CHECK(r.setup.tool_choice.mode == ToolChoice::Mode::automatic);
  // previous_response_id alone continues a conversation.
  CHECK(parse_responses_request(R"({"model": "m", "previous_response_id": "resp_1"})").input.empty());
}

TEST_CASE("responses: every mistake is a 400 naming its parameter", "[server][parse][bad-input]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"input": "x"})", "model"},
      {R"({"model": 5, "input": "x"})", "model"},
      {R"({"model": "m"})", "input"},
      {R"({"model": "m", "input": 5})", "input"},
      {R"({"model": "m", "input": [5]})", "input[0]"},
      {R"({"model": "m", "input": [{"role": "user"}]})", "input[0].content"},
      {R"({"model": "m", "input": [{"role": "robot", "content": "x"}]})", "input[0].role"},
      {R"({"model": "m", "input": [{"role": "user", "content": [{"type": "input_file"}]}]})", "input[0].content[0].type"},
      {R"({"model": "m", "input": [{"role": "user", "content": [{"type": "input_text"}]}]})", "input[0].content[0].text"},
      {R"({"model": "m", "input": [{"type": "item_reference", "id": "x"}]})", "input[0].type"},
      {R"({"model": "m", "input": [{"type": "function_call", "name": "f", "arguments": "{}"}]})", "input[0].call_id"},
      {R"({"model": "m", "input": [{"type": "reasoning", "content": [{"type": "text", "text": "x"}]}]})", "input[0].content[0].type"},
      {R"({"model": "m", "input": "x", "temperature": "1"})", "temperature"},
      {R"({"model": "m", "input": "x", "temperature": 2.5})", "temperature"},
      {R"({"model": "m", "input": "x", "top_p": 1.5})", "top_p"},
      {R"({"model": "m", "input": "x", "max_output_tokens": 0})", "max_output_tokens"},
      {R"({"model": "m", "input": "x", "max_output_tokens": 1.5})", "max_output_tokens"},
      {R"({"model": "m", "input": "x", "seed": "1"})", "seed"},
      {R"({"model": "m", "input": "x", "top_logprobs": 21})", "top_logprobs"},
      {R"({"model": "m", "input": "x", "stop": ["a", "b", "c", "d", "e"]})", "stop"},
      {R"({"model": "m", "input": "x", "stop": [1]})", "stop[0]"},
      {R"({"model": "m", "input": "x", "stop": ")" + std::string(1025, 'a') + R"("})", "stop"},
      {R"({"model": "m", "input": "x", "store": "yes"})", "store"},
      {R"({"model": "m", "input": "x", "tools": {}})", "tools"},
      {R"({"model": "m", "input": "x", "tools": [{"type": "function"}]})", "tools[0].name"},
      {R"({"model": "m", "input": "x", "tools": [{"type": "function", "name": "a b"}]})", "tools[0].name"},
      {R"({"model": "m", "input": "x", "tools": [{"type": "function", "name": "f", "parameters": []}]})", "tools[0].parameters"},
      {R"({"model": "m", "input": "x", "tools": [{"type": "function", "name": "f", "parameters": {"properties": {"a": 1}}}]})",
       "tools[0].parameters.properties.a"},
      {R"({"model": "m", "input": "x", "tools": [{"type": "function", "name": "f"}, {"type": "function", "name": "f"}]})", "tools[1]"},
      {R"({"model": "m", "input": "x", "tool_choice": "sometimes"})", "tool_choice"},
      {R"({"model": "m", "input": "x", "tool_choice": "required"})", "tool_choice"},
      {R"({"model": "m", "input": "x", "tool_choice": {"type": "file_search"}})", "tool_choice.type"},
      {R"({"model": "m", "input": "x", "reasoning": {"effort": "max"}})", "reasoning.effort"},
      {R"({"model": "m", "input": "x", "reasoning": "high"})", "reasoning"},
      {R"({"model": "m", "input": "x", "text": {"format": {"type": "yaml"}}})", "text.format.type"},
      {R"({"model": "m", "input": "x", "text": {"format": {"type": "json_schema", "name": "n"}}})", "text.format.schema"},
      {R"({"model": "m", "input": "x", "metadata": {"k": 1}})", "metadata.k"},
      {R"({"model": "m", "input": "x", "background": true})", "background"},
      {R"({"model": "m", "input": "x", "include": [3]})", "include[0]"},
      {R"({"model": "m", "input": "x", "include": ["message.output_text.logprobs", "nope"]})", "include[1]"},
      {R"({"model": "m", "input": "x", "tools": [{"type": "function", "name": "f", "parameters": {"type": "string"}}]})",
       "tools[0].parameters.type"},
      {R"({"model": "m", "input": "x", "text": {"format": {"type": "json_schema", "name": "n", "schema": {"required": "a"}}}})",
       "text.format.schema.required"},
      {R"({"model": "m", "input": "x", "logit_bias": {"50256": -100}})", "logit_bias"},
  };
  for (const auto& [body, param] : cases) {
    INFO(body);
    const ApiError e = error_of(parse_responses_request, body);
    CHECK(e.status() == 400);
    CHECK(e.param() == param);
    CHECK(e.to_json()["error"]["type"] == "invalid_request_error");
  }
}

TEST_CASE("malformed bodies are 400 invalid_json for every endpoint", "[server][parse][bad-input]") {
  for (const std::string body : {"", "{", "[1]", "\"text\"", "{\"model\": }", "{\"a\":1} trailing", "\xff\xfe"}) {
    INFO(body);
    CHECK(error_of(parse_responses_request, body).code() == "invalid_json");
    CHECK(error_of(parse_chat_request, body).code() == "invalid_json");
    CHECK(error_of(parse_completions_request, body).code() == "invalid_json");
  }
}

TEST_CASE("chat: messages, tool calls, reasoning and formats", "[server][parse]") {
  const auto r = parse_chat_request(R"({
    "model": "m", "n": 3, "max_completion_tokens": 50, "max_tokens": 7, "logprobs": true, "top_logprobs": 2,
    "reasoning_effort": "low", "stream": true, "stream_options": {"include_usage": true},
    "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}},
    "tools": [{"type": "function", "function": {"name": "get", "parameters": {"type": "object"}}}],
    "tool_choice": {"type": "function", "function": {"name": "get"}},
    "messages": [
      {"role": "system", "content": "S"},
      {"role": "user", "content": [{"type": "text", "text": "U"}]},
      {"role": "assistant", "content": "Checking.", "reasoning_content": "R",
       "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get", "arguments": "{\"a\":1}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "result"},
      {"role": "assistant", "content": null, "reasoning": "R2"}]})");
  CHECK(r.n == 3);
  CHECK(r.options.max_tokens == 50);
  CHECK(r.options.sampling.logprobs == 2);
  CHECK(r.setup.effort == ReasoningEffort::low);
  CHECK(r.include_usage);
  CHECK(r.setup.format.type == ResponseFormat::Type::json_schema);
  CHECK(r.setup.tool_choice.name == "get");
  using K = ConversationItem::Kind;
  REQUIRE(r.messages.size() == 7);
  CHECK((r.messages[0].role == "system" && r.messages[0].text == "S"));
  CHECK(r.messages[1].text == "U");
  CHECK((r.messages[2].kind == K::reasoning && r.messages[2].text == "R"));
  CHECK((r.messages[3].kind == K::message && r.messages[3].preamble));  // text before a call
  CHECK((r.messages[4].kind == K::function_call && r.messages[4].call_id == "call_1" && r.messages[4].text == "{\"a\":1}"));
  CHECK((r.messages[5].kind == K::function_call_output && r.messages[5].call_id == "call_1"));
  CHECK((r.messages[6].kind == K::reasoning && r.messages[6].text == "R2"));
}

TEST_CASE("chat: every mistake is a 400 naming its parameter", "[server][parse][bad-input]") {
  const std::string msg = R"("messages": [{"role": "user", "content": "x"}])";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"model": "m"})", "messages"},
      {R"({"model": "m", "messages": []})", "messages"},
      {R"({"model": "m", "messages": [{"role": "function", "content": "x"}]})", "messages[0].role"},
      {R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content[0].type"},
      {R"({"model": "m", "messages": [{"role": "tool", "content": "x"}]})", "messages[0].tool_call_id"},
      {R"({"model": "m", "messages": [{"role": "assistant", "tool_calls": [{"id": "c"}]}]})", "messages[0].tool_calls[0].function"},
      {"{\"model\": \"m\", " + msg + ", \"n\": 0}", "n"},
      {"{\"model\": \"m\", " + msg + ", \"n\": 17}", "n"},
      {"{\"model\": \"m\", " + msg + ", \"top_logprobs\": 2}", "top_logprobs"},
      {"{\"model\": \"m\", " + msg + ", \"stream_options\": {\"include_usage\": true}}", "stream_options"},
      {"{\"model\": \"m\", " + msg + ", \"response_format\": {\"type\": \"json_schema\"}}", "response_format.json_schema"},
      {"{\"model\": \"m\", " + msg + ", \"tools\": [{\"type\": \"function\"}]}", "tools[0].function"},
      {"{\"model\": \"m\", " + msg + ", \"reasoning_effort\": \"minimal\"}", "reasoning_effort"},
      {"{\"model\": \"m\", " + msg + ", \"max_tokens\": -5}", "max_tokens"},
      {"{\"model\": \"m\", " + msg + ", \"logit_bias\": {\"x\": 1}}", "logit_bias"},
      {"{\"model\": \"m\", " + msg + ", \"logit_bias\": [1]}", "logit_bias"},
      {"{\"model\": \"m\", " + msg + R"(, "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "array"}}}]})",
       "tools[0].function.parameters.type"},
  };
  for (const auto& [body, param] : cases) {
    INFO(body);
    const ApiError e = error_of(parse_chat_request, body);
    CHECK(e.status() == 400);
    CHECK(e.param() == param);
  }
}

TEST_CASE("completions: prompts, echo, logprobs and their mistakes", "[server][parse]") {
  auto r = parse_completions_request(R"({"model": "m", "prompt": ["a", [1, 2], "b"], "n": 2, "echo": true})");
  REQUIRE(r.prompts.size() == 3);
  CHECK(r.prompts[0].text == "a");
  CHECK(r.prompts[1].tokens == std::vector<uint32_t>{1, 2});
  CHECK(r.options.max_tokens == 16);  // the API's default
  r = parse_completions_request(R"({"model": "m", "prompt": [5, 6, 7], "logprobs": 3, "max_tokens": 0})");
  REQUIRE(r.prompts.size() == 1);
  CHECK(r.prompts[0].tokens.size() == 3);
  CHECK(r.options.sampling.logprobs == 3);
  CHECK(r.options.max_tokens == 0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"model": "m"})", "prompt"},
      {R"({"model": "m", "prompt": 5})", "prompt"},
      {R"({"model": "m", "prompt": []})", "prompt"},
      {R"({"model": "m", "prompt": [1, -2]})", "prompt[1]"},
      {R"({"model": "m", "prompt": [1, 5000000000]})", "prompt[1]"},
      {R"({"model": "m", "prompt": [1, "x"]})", "prompt[1]"},
      {R"({"model": "m", "prompt": ["a", {}]})", "prompt[1]"},
      {R"({"model": "m", "prompt": "a", "best_of": 3})", "best_of"},
      {R"({"model": "m", "prompt": "a", "suffix": "z"})", "suffix"},
      {R"({"model": "m", "prompt": "a", "echo": true, "logprobs": 1})", "logprobs"},
      {R"({"model": "m", "prompt": "a", "logprobs": 21})", "logprobs"},
  };
  for (const auto& [body, param] : cases) {
    INFO(body);
    const ApiError e = error_of(parse_completions_request, body);
    CHECK(e.status() == 400);
    CHECK(e.param() == param);
  }
}

TEST_CASE("hostile bodies are 400s with short messages for every endpoint", "[server][parse][bad-input]") {
  // Found by the server_request fuzz harness (tests/fuzz/corpus/server_request/regress-*): a
  // number beyond a double escaped as nlohmann's out_of_range (a 500); 20,000 levels of
  // nesting overflowed the stack when the request was dumped; messages quoted whole values.
  const std::string deep = std::string(20000, '[') + std::string(20000, ']');
  for (const std::string& body : {std::string(R"({"model": "m", "input": "hi", "messages": [], "prompt": "a", "top_p": 1e400})"),
                                 R"({"model": "m", "metadata": {"k": )" + deep + "}}",
                                 R"({"model": "m", "input": ")" + std::string(20000, 'b') + "\x01\"}"}) {
    for (auto parse : {+[](std::string_view b) { (void)parse_responses_request(b); },
                       +[](std::string_view b) { (void)parse_chat_request(b); },
                       +[](std::string_view b) { (void)parse_completions_request(b); }}) {
      const ApiError e = error_of(parse, body);
      CHECK(e.status() == 400);
      CHECK(e.code() == "invalid_json");
      CHECK(std::string(e.what()).size() < 600);
    }
  }
  // The deepest body accepted still dumps (the server echoes it back).
  const std::string ok_depth = std::string(115, '[') + std::string(115, ']');
  const auto r = parse_responses_request(R"({"model": "m", "input": "hi", "tools": [{"type": "function", "name": "f",
      "parameters": {"type": "object", "properties": {"a": {"default": )" + ok_depth + "}}}}]}");
  CHECK(!r.tools_echo.dump().empty());

  const std::string long_name(20000, 'a');
  const std::vector<std::pair<std::string, std::string>> quoting = {
      {R"({"model": "m", "input": "hi", "tools": [{"type": "function", "name": ")" + long_name + "\"}]}", "tools[0].name"},
      {R"({"model": "m", "input": [{"role": ")" + long_name + "\", \"content\": \"x\"}]}", "input[0].role"},
      {R"({"model": "m", "input": "hi", "tool_choice": ")" + long_name + "\"}", "tool_choice"},
      {R"({"model": "m", "input": [{"role": "user", "content": [{"type": ")" + long_name + "\"}]}]}",
       "input[0].content[0].type"},
  };
  for (const auto& [body, param] : quoting) {
    INFO(param);
    const ApiError e = error_of(parse_responses_request, body);
    CHECK(e.param() == param);
    CHECK(std::string(e.what()).size() < 300);
    CHECK_THAT(e.what(), Catch::Contains("(20000 bytes)"));
  }
}

TEST_CASE("schema mistakes say whose schema; values the API knows are accepted", "[server][parse][bad-input]") {
  // A response format's schema is not a function's parameters.
  ApiError e = error_of(parse_responses_request,
                        R"({"model": "m", "input": "x", "text": {"format": {"type": "json_schema", "name": "n", "schema": {"properties": 5}}}})");
  CHECK(e.code() == "invalid_response_format");
  e = error_of(parse_responses_request,
               R"({"model": "m", "input": "x", "tools": [{"type": "function", "name": "f", "parameters": {"properties": 5}}]})");
  CHECK(e.code() == "invalid_function_parameters");
  e = error_of(parse_chat_request, R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "logit_bias": {"1": 5}})");
  CHECK(e.code() == "unsupported_parameter");
  // Coding agents send include: ["reasoning.encrypted_content"]; empty biases change nothing.
  CHECK_NOTHROW(parse_responses_request(
      R"({"model": "m", "input": "x", "include": ["reasoning.encrypted_content", "message.output_text.logprobs"]})"));
  CHECK(parse_responses_request(R"({"model": "m", "input": "x", "include": ["message.output_text.logprobs"]})").include_logprobs);
  CHECK_NOTHROW(parse_chat_request(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "logit_bias": {}})"));
  CHECK_NOTHROW(parse_chat_request(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "logit_bias": null})"));
  // Parameters without a type, or of type object, are functions' usual shape.
  CHECK_NOTHROW(parse_responses_request(
      R"({"model": "m", "input": "x", "tools": [{"type": "function", "name": "f", "parameters": {"properties": {}}}]})"));
}

TEST_CASE("error messages keep what the client sent whole, NULs included", "[server][parse][bad-input]") {
  const ApiError e = error_of(parse_responses_request, R"({"model": "m", "input": [{"role": "r\u0000x", "content": "x"}]})");
  const std::string message = e.to_json()["error"]["message"];
  CHECK(message.find(std::string("r\0x", 3)) != std::string::npos);
  CHECK(message.back() != 'r');  // the text goes on after the quoted role
}
