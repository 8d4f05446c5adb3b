// A chat as Harmony: the conversation JSON the renderer takes (checked through the real
// renderer and tokenizer), and the constraint spec the grammar compiler takes.
#include <catch2/catch.hpp>

#include <gptoss.hpp>
#include "api/api_error.hpp"
#include "api/harmony_conversation.hpp"
#include "engine/grammar_cache.hpp"
#include "support/real_tokenizer.hpp"

using namespace gptoss_server;
using nlohmann::json;

namespace {

using gptoss::test::real_tokenizer;

std::string rendered_text(gptoss_tokenizer_t tok, const json& conversation) {
  const auto ids = gptoss::render(tok, conversation.dump());
  std::string text;
  for (uint32_t id : ids) text += gptoss::token_bytes(tok, id);
  return text;
}

ConversationItem message(std::string role, std::string text, bool preamble = false) {
  return {ConversationItem::Kind::message, std::move(role), preamble, std::move(text), "", ""};
}

ChatSetup weather_setup() {
  ChatSetup setup;
  setup.instructions = "Be brief.";
  setup.effort = ReasoningEffort::high;
  setup.tools.push_back({"get_weather", "Weather now.",
                         json::parse(R"({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})"),
                         false});
  return setup;
}

}  // namespace

TEST_CASE("a conversation renders as Harmony: system, developer, turns, tool calls", "[server][harmony]") {
  auto tok = real_tokenizer();
  const std::vector<ConversationItem> items = {
      message("system", "Answer in French."),
      message("user", "Weather in Paris?"),
      {ConversationItem::Kind::reasoning, "assistant", false, "Need the tool.", "", ""},
      message("assistant", "Let me check.", true),
      {ConversationItem::Kind::function_call, "assistant", false, "{\"city\":\"Paris\"}", "call_1", "get_weather"},
      {ConversationItem::Kind::function_call_output, "", false, "{\"c\":21}", "call_1", ""},
      message("developer", "Now answer."),
  };
  const json conversation = harmony_conversation(weather_setup(), items, "2025-06-28", "input");
  const std::string text = rendered_text(tok.get(), conversation);
  INFO(text);
  CHECK(text.find("<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
                  "Knowledge cutoff: 2024-06\nCurrent date: 2025-06-28\n\nReasoning: high\n\n"
                  "# Valid channels: analysis, commentary, final. Channel must be included for every message.\n"
                  "Calls to these tools must go to the commentary channel: 'functions'.<|end|>") == 0);
  // The request's instructions, then the leading system message, then the tools.
  CHECK(text.find("<|start|>developer<|message|># Instructions\n\nBe brief.\n\nAnswer in French.\n\n# Tools\n\n"
                  "## functions\n\nnamespace functions {\n\n// Weather now.\ntype get_weather = (_: {\ncity: string,\n}) => any;"
                  "\n\n} // namespace functions<|end|>") != std::string::npos);
  CHECK(text.find("<|start|>user<|message|>Weather in Paris?<|end|>") != std::string::npos);
  // The last assistant turn is a tool call: the analysis stays.
  CHECK(text.find("<|start|>assistant<|channel|>analysis<|message|>Need the tool.<|end|>") != std::string::npos);
  CHECK(text.find("<|start|>assistant<|channel|>commentary<|message|>Let me check.<|end|>") != std::string::npos);
  CHECK(text.find("<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>"
                  "{\"city\":\"Paris\"}<|call|>") != std::string::npos);
  CHECK(text.find("<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{\"c\":21}<|end|>") !=
        std::string::npos);
  CHECK(text.find("<|start|>developer<|message|># Instructions\n\nNow answer.<|end|>") != std::string::npos);
  CHECK(text.size() >= 18);
  CHECK(text.compare(text.size() - 18, 18, "<|start|>assistant") == 0);
}

TEST_CASE("a final answer in history drops the analysis before it", "[server][harmony]") {
  auto tok = real_tokenizer();
  const std::vector<ConversationItem> items = {
      message("user", "Hi"), {ConversationItem::Kind::reasoning, "assistant", false, "secret", "", ""},
      message("assistant", "Hello!"), message("user", "Again")};
  const std::string text = rendered_text(tok.get(), harmony_conversation(ChatSetup{}, items, "2025-06-28", "input"));
  CHECK(text.find("secret") == std::string::npos);
  CHECK(text.find("<|start|>assistant<|channel|>final<|message|>Hello!<|end|>") != std::string::npos);
  CHECK(text.find("<|start|>developer") == std::string::npos);  // nothing to say there
  CHECK(text.find("Reasoning: medium") != std::string::npos);   // the default effort
}

TEST_CASE("a function output without its call is a 400 naming the items", "[server][harmony][bad-input]") {
  const std::vector<ConversationItem> items = {{ConversationItem::Kind::function_call_output, "", false, "x", "call_9", ""}};
  try {
    harmony_conversation(ChatSetup{}, items, "2025-06-28", "messages");
    FAIL("no error");
  } catch (const ApiError& e) {
    CHECK(e.status() == 400);
    CHECK(e.param() == "messages");
    CHECK(std::string(e.what()).find("call_9") != std::string::npos);
  }
}

TEST_CASE("the constraint spec follows tool_choice and the response format", "[server][harmony]") {
  ChatSetup setup = weather_setup();
  json spec = constraint_spec(setup);
  CHECK(spec["channels"] == json::array({"analysis", "commentary", "final"}));
  CHECK(spec["tools"]["functions"]["tools"][0]["name"] == "get_weather");
  CHECK(spec["tool_choice"] == "auto");
  CHECK(spec["response_format"] == json{{"type", "text"}});
  setup.tool_choice = {ToolChoice::Mode::function, "get_weather"};
  setup.format.type = ResponseFormat::Type::json_schema;
  setup.format.schema = json{{"type", "object"}};
  spec = constraint_spec(setup);
  CHECK(spec["tool_choice"] == json{{"type", "function"}, {"name", "get_weather"}});
  CHECK(spec["response_format"] == json{{"type", "json_schema"}, {"schema", {{"type", "object"}}}});
  CHECK_FALSE(constraint_spec(ChatSetup{}).contains("tools"));
}

TEST_CASE("grammars compile once per spec; a bad one is the compiler's clear error", "[server][harmony]") {
  auto tok = real_tokenizer();
  GrammarCache cache(tok.get(), 2);
  ChatSetup setup = weather_setup();
  setup.tool_choice.mode = ToolChoice::Mode::required;
  const std::string spec = constraint_spec(setup).dump();
  Grammar a = cache.harmony(spec);
  CHECK(a);
  CHECK(cache.harmony(spec) == a);
  cache.harmony(constraint_spec(ChatSetup{}).dump());
  ChatSetup other = weather_setup();
  other.tool_choice.mode = ToolChoice::Mode::none;
  cache.harmony(constraint_spec(other).dump());  // the first is least recent: out
  CHECK(cache.harmony(spec) != a);
  setup.tools[0].parameters = json::parse(R"({"type": "object", "properties": {"c": {"type": "string", "pattern": "x"}}})");
  try {
    cache.harmony(constraint_spec(setup).dump());
    FAIL("compiled");
  } catch (const gptoss::error& e) {
    CHECK(e.status() == gptoss_status_unsupported_argument);
    CHECK(e.message().find("pattern") != std::string::npos);
  }
}
