// Harmony turns under a grammar: every header form the model writes is accepted and parses in
// the strict parser as intended; everything else (undeclared tools, stray special tokens,
// wrong terminators, the tool choice, the reasoning budget) is refused.
#include <catch2/catch.hpp>

#include "constrain/constrain_test_support.hpp"
#include "libgptoss/common/error.hpp"
#include "libgptoss/constrain/harmony_grammar.hpp"
#include "libgptoss/harmony/stream_parser.hpp"

using namespace gptoss;
using namespace gptoss::constrain;

namespace {

const char* kTools = R"({"functions": {"tools": [
    {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                          "required": ["city"], "additionalProperties": false}},
    {"name": "ping"}]},
  "python": {"description": "Runs code."}})";

CompiledGrammar grammar(const std::string& spec) {
  CompiledGrammar g;
  g.harmony = std::make_shared<const HarmonyGrammar>(
      test::real_vocab(), HarmonySpec::from_json(harmony::Json::parse(spec), "spec_json"), "spec_json");
  return g;
}

std::string with_tools(const std::string& rest = "") {
  return std::string(R"({"tools": )") + kTools + rest + "}";
}

std::vector<uint32_t> tokens(const std::string& text) { return test::constrain_tokenizer()->encode_with_specials(text); }

// Feeds `text` token by token; returns how many tokens were accepted (all, if it fits).
size_t feed(Constraint& c, const std::string& text) {
  const auto ids = tokens(text);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!c.allows(ids[i])) return i;
    c.accept(ids[i]);
  }
  return ids.size();
}

bool accepts(const CompiledGrammar& g, const std::string& text, const ConstraintOptions& o = {}) {
  auto c = g.make_constraint(o);
  return feed(*c, text) == tokens(text).size();
}

// The messages the strict parser reads from the output (generation starts after
// <|start|>assistant).
std::vector<harmony::Message> strict_parse(const std::string& text) {
  harmony::StreamParser p(test::constrain_tokenizer(), harmony::Role::assistant, true);
  for (uint32_t t : tokens(text)) p.process(t);
  p.process_eos();
  return p.messages();
}

}  // namespace

TEST_CASE("every header form is accepted and parses strictly as intended", "[constrain][harmony]") {
  auto g = grammar(with_tools());
  struct Case {
    std::string text, recipient, channel, content_type;
  };
  const std::string args = R"({"city":"Paris"})";
  const std::vector<Case> cases = {
      {" to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>" + args + "<|call|>",
       "functions.get_weather", "commentary", "<|constrain|>json"},
      {" to=functions.get_weather<|channel|>commentary<|constrain|>json<|message|>" + args + "<|call|>",
       "functions.get_weather", "commentary", "<|constrain|>json"},
      {"<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>" + args + "<|call|>",
       "functions.get_weather", "commentary", "<|constrain|>json"},
      {"<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>" + args + "<|call|>",
       "functions.get_weather", "commentary", "<|constrain|>json"},
      {"<|channel|>commentary to=functions.get_weather json<|message|>" + args + "<|call|>", "functions.get_weather",
       "commentary", "json"},
      {" to=functions.get_weather<|channel|>commentary<|message|>" + args + "<|call|>", "functions.get_weather",
       "commentary", ""},
      {" to=functions.ping<|channel|>analysis<|message|>{}<|end|>", "functions.ping", "analysis", ""},
      {" to=python<|channel|>analysis code<|message|>print(1)<|call|>", "python", "analysis", "code"},
      {"<|channel|>final<|message|>Hi!<|return|>", "", "final", ""},
      {"<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>ok<|return|>", "",
       "final", ""},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    REQUIRE(accepts(g, c.text));
    auto con = g.make_constraint({});
    feed(*con, c.text);
    CHECK(con->finished() == (c.text.ends_with("<|call|>") || c.text.ends_with("<|return|>")));
    const auto messages = strict_parse(c.text);
    const auto& m = messages.back();
    CHECK(m.recipient.value_or("") == c.recipient);
    CHECK(m.channel.value_or("") == c.channel);
    CHECK(m.content_type.value_or("") == c.content_type);
  }
}

TEST_CASE("what the grammar refuses", "[constrain][harmony]") {
  auto g = grammar(with_tools());
  for (const char* bad : {
           " to=functions.nope<|channel|>commentary<|message|>{}<|call|>",          // undeclared tool
           "<|channel|>final to=functions.ping<|message|>{}<|call|>",              // recipient on final
           "<|channel|>commentary<|message|>hi<|call|>",                            // <|call|> without recipient
           "<|channel|>analysis<|message|>hi<|return|>",                            // <|return|> off final
           " to=functions.ping<|channel|>commentary<|message|>{}<|return|>",        // <|return|> after a call
           " to=functions.ping<|channel|>commentary<|message|>{\"a\":1}<|call|>",   // arguments beyond the schema
           " to=functions.get_weather<|channel|>commentary<|message|>{}<|call|>",   // missing a required argument
           "<|channel|>chat<|message|>hi<|end|>",                                   // not a valid channel
           "<|message|>hi<|end|>",                                                  // no channel
           "<|channel|>final<|message|>a<|start|>b<|end|>",                         // stray special in content
           "<|channel|>final<|message|>a<|reserved_200100|><|end|>",
           "<|channel|>final<|message|>a<|end|>x",                                  // text between messages
           "<|channel|>final<|message|>a<|end|><|start|>user<|message|>x<|end|>",   // only the assistant speaks
           "<|channel|>final <|constrain|>json<|message|>{}<|end|>",                // content type without recipient
       })
    CHECK_FALSE(accepts(g, bad));
  // The reason names the token and where it came.
  auto c = g.make_constraint({});
  feed(*c, "<|channel|>final<|message|>a");
  try {
    c->accept(*test::real_vocab()->special_id("<|call|>"));
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(e.status() == gptoss_status_invalid_argument);
    CHECK_THAT(e.what(), Catch::Contains("<|call|>") && Catch::Contains("channel final"));
  }
  feed(*c, "<|return|>");
  REQUIRE(c->finished());
  CHECK_THROWS_AS(c->accept(0), Error);
}

TEST_CASE("tool_choice: none, required, named", "[constrain][harmony]") {
  auto none = grammar(with_tools(R"(, "tool_choice": "none")"));
  CHECK_FALSE(accepts(none, " to=functions.ping<|channel|>commentary<|message|>{}<|call|>"));
  CHECK(accepts(none, "<|channel|>final<|message|>x<|return|>"));
  auto required = grammar(with_tools(R"(, "tool_choice": "required")"));
  CHECK_FALSE(accepts(required, "<|channel|>final<|message|>x<|return|>"));
  CHECK(accepts(required, "<|channel|>analysis<|message|>hmm<|end|><|start|>assistant to=functions.ping<|channel|>"
                          "commentary<|message|>{}<|call|>"));
  CHECK(accepts(required, " to=python<|channel|>analysis<|message|>1<|call|>"));
  auto named = grammar(with_tools(R"(, "tool_choice": {"type": "function", "name": "get_weather"})"));
  CHECK_FALSE(accepts(named, " to=functions.ping<|channel|>commentary<|message|>{}<|call|>"));
  CHECK_FALSE(accepts(named, " to=python<|channel|>analysis<|message|>1<|call|>"));
  CHECK(accepts(named, " to=functions.get_weather<|channel|>commentary<|message|>{\"city\":\"x\"}<|call|>"));
  CHECK(accepts(grammar(with_tools(R"(, "tool_choice": {"type": "function", "function": {"name": "ping"}})")),
                "<|channel|>commentary to=functions.ping<|message|>{}<|call|>"));
}

TEST_CASE("parallel_tool_calls: false allows one call, ended by <|call|>", "[constrain][harmony]") {
  const std::string two_calls = " to=functions.ping<|channel|>commentary<|message|>{}<|end|>"
                                "<|start|>assistant to=functions.get_weather<|channel|>commentary<|message|>{\"city\":\"x\"}<|call|>";
  CHECK(accepts(grammar(with_tools()), two_calls));
  CHECK(accepts(grammar(with_tools(R"(, "parallel_tool_calls": true)")), two_calls));
  const auto one = grammar(with_tools(R"(, "tool_choice": "required", "parallel_tool_calls": false)"));
  CHECK_FALSE(accepts(one, two_calls));
  CHECK_FALSE(accepts(one, " to=python<|channel|>analysis<|message|>1<|end|>"));
  CHECK(accepts(one, " to=functions.ping<|channel|>commentary<|message|>{}<|call|>"));
  CHECK(accepts(one, " to=python<|channel|>analysis<|message|>1<|call|>"));
  // Reasoning before the one call is still allowed.
  CHECK(accepts(one, "<|channel|>analysis<|message|>hmm<|end|><|start|>assistant to=functions.ping<|channel|>"
                     "commentary<|message|>{}<|call|>"));
}

TEST_CASE("the reasoning budget closes analysis and opens the answer", "[constrain][harmony]") {
  auto g = grammar(R"({"response_format": {"type": "json_object"}})");
  ConstraintOptions o;
  o.max_reasoning_tokens = 3;
  auto c = g.make_constraint(o);
  const auto v = test::real_vocab();
  REQUIRE(feed(*c, "<|channel|>analysis<|message|> one two three") == tokens("<|channel|>analysis<|message|> one two three").size());
  // Only <|end|>, then only <|start|>, then the final header, one way or another.
  TokenMask mask(v->num_tokens());
  c->fill_mask(mask);
  CHECK(test::allowed_tokens(mask) == std::vector<uint32_t>{*v->special_id("<|end|>")});
  c->accept(*v->special_id("<|end|>"));
  c->fill_mask(mask);
  CHECK(test::allowed_tokens(mask) == std::vector<uint32_t>{*v->special_id("<|start|>")});
  c->accept(*v->special_id("<|start|>"));
  auto spent = c->clone();
  CHECK(feed(*spent, "assistant<|channel|>analysis") < tokens("assistant<|channel|>analysis").size());
  REQUIRE(feed(*c, "assistant<|channel|>final<|message|>{}<|return|>") ==
          tokens("assistant<|channel|>final<|message|>{}<|return|>").size());
  CHECK(c->finished());
  // Budget 0: no analysis at all; calls and final still fine. Required: the call comes next.
  o.max_reasoning_tokens = 0;
  CHECK_FALSE(accepts(g, "<|channel|>analysis<|message|>x<|end|>", o));
  CHECK(accepts(g, "<|channel|>final<|message|>{}<|return|>", o));
  auto req = grammar(with_tools(R"(, "tool_choice": "required")"));
  o.max_reasoning_tokens = 1;
  CHECK_FALSE(accepts(req, "<|channel|>analysis<|message|> a b<|end|>", o));
  CHECK_FALSE(accepts(req, "<|channel|>analysis<|message|> a<|end|><|start|>assistant<|channel|>commentary<|message|>", o));
  CHECK(accepts(req, "<|channel|>analysis<|message|> a<|end|><|start|>assistant to=functions.ping<|channel|>commentary"
                     "<|message|>{}<|call|>", o));
  // Analysis that calls a tool is not reasoning: it does not count.
  CHECK(accepts(req, " to=python<|channel|>analysis<|message|>print(1 + 2 + 3)<|call|>", o));
}

TEST_CASE("start: message; custom channels", "[constrain][harmony]") {
  auto g = grammar(R"({"start": "message", "channels": ["final"]})");
  CHECK(accepts(g, "<|start|>assistant<|channel|>final<|message|>x<|return|>"));
  CHECK_FALSE(accepts(g, "<|channel|>final<|message|>x<|return|>"));
  CHECK_FALSE(accepts(g, "<|start|>assistant<|channel|>analysis<|message|>x<|end|>"));
}

TEST_CASE("bad Harmony specs are refused with the path of the field", "[constrain][harmony]") {
  auto refuses = [](const std::string& spec, gptoss_status status, const std::string& part) {
    INFO(spec);
    try {
      grammar(spec);
      FAIL("compiled");
    } catch (const Error& e) {
      CHECK(e.status() == status);
      CHECK_THAT(e.what(), Catch::Contains(part));
    }
  };
  const auto invalid = gptoss_status_invalid_argument;
  refuses(R"({"colour": 1})", invalid, "spec_json.colour: unknown field");
  refuses(R"({"tool_choice": "sometimes"})", invalid, "spec_json.tool_choice");
  refuses(R"({"tool_choice": "required"})", invalid, "no tools are declared");
  refuses(with_tools(R"(, "tool_choice": {"type": "function", "name": "nope"})"), invalid, "no tool \"nope\"");
  refuses(R"({"channels": ["final answer"]})", invalid, "spec_json.channels[0]");
  refuses(R"({"channels": []})", invalid, "spec_json.channels");
  refuses(R"({"tools": {"functions": {"tools": [{"name": "a<b"}]}}})", invalid, "spec_json.tools.functions.tools[0].name");
  refuses(R"({"tools": {"functions": {"tools": [{"name": "f", "parameters": {"type": "object", "properties":
             {"x": {"type": "string", "format": "email"}}}}]}}})",
          gptoss_status_unsupported_argument, "spec_json.tools.functions.tools[0].parameters: at #/properties/x");
  refuses(R"({"response_format": {"type": "json_schema"}})", invalid, "spec_json.response_format");
  refuses(R"({"response_format": {"type": "xml"}})", invalid, "spec_json.response_format.type");
  refuses(R"({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"minimum": "0"}}}})",
          invalid, "spec_json.response_format.schema");
  refuses(R"({"start": "middle"})", invalid, "spec_json.start");
  refuses(R"({"parallel_tool_calls": "no"})", invalid, "spec_json.parallel_tool_calls");
  refuses(R"({"tools": {"functions": {"tools": [{"name": "f"}]}}, "tool_choice": "required", "channels": ["final"]})",
          invalid, "spec_json.channels");
}
