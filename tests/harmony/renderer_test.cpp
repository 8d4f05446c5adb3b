// Rendering: message layout, chain-of-thought dropping, training ends, content sections.
// Expected texts are written from the format rules (docs/harmony.md).
#include <algorithm>

#include <catch2/catch.hpp>

#include "harmony/harmony_test_support.hpp"
#include "libgptoss/common/error.hpp"
#include "libgptoss/harmony/message_json.hpp"
#include "libgptoss/harmony/renderer.hpp"

using namespace gptoss;
using namespace gptoss::harmony;

namespace {
Message msg(Role role, const char* channel, const char* text) {
  Message m = Message::text(role, text);
  if (channel != nullptr) m.channel = channel;
  return m;
}
std::string conv(const std::vector<Message>& ms, bool drop) {
  return pieces_text(render_conversation(ms, ConversationConfig{drop}));
}
}  // namespace

TEST_CASE("render: header fields in order, tool calls end in <|call|>", "[harmony]") {
  Message m = Message::text(Role::assistant, "{\"a\":1}");
  m.recipient = "functions.f";
  m.channel = "commentary";
  m.content_type = "<|constrain|>json";
  CHECK(pieces_text(render_message(m, {})) ==
        "<|start|>assistant to=functions.f<|channel|>commentary <|constrain|>json<|message|>{\"a\":1}<|call|>");
  m.content_type = "code";
  m.recipient = "all";  // "all" is nobody in particular: not written, but still a call
  CHECK(pieces_text(render_message(m, {})) == "<|start|>assistant<|channel|>commentary code<|message|>{\"a\":1}<|call|>");
  Message u = Message::text(Role::user, "hi");
  u.name = "alice";
  CHECK(pieces_text(render_message(u, {})) == "<|start|>user:alice<|message|>hi<|end|>");
  Message t = Message::text(Role::tool, "42");
  t.name = "functions.f";
  t.recipient = "assistant";
  t.channel = "commentary";
  CHECK(pieces_text(render_message(t, {})) ==
        "<|start|>functions.f to=assistant<|channel|>commentary<|message|>42<|end|>");
}

TEST_CASE("render: a tool message without a name is rejected", "[harmony]") {
  Message t = Message::text(Role::tool, "42");
  CHECK_THROWS_AS(render_message(t, {}), Error);
  Message u = Message::text(Role::user, "x");
  u.content.push_back(SystemContent{});
  CHECK_THROWS_AS(render_message(u, {}), Error);
}

TEST_CASE("render: auto_drop_analysis drops analysis before the first final answer", "[harmony]") {
  std::vector<Message> ms{msg(Role::user, nullptr, "q1"),       msg(Role::assistant, "analysis", "a1"),
                          msg(Role::assistant, "final", "f1"),   msg(Role::user, nullptr, "q2"),
                          msg(Role::assistant, "analysis", "a2"), msg(Role::assistant, "final", "f2")};
  const std::string kept_all =
      "<|start|>user<|message|>q1<|end|><|start|>assistant<|channel|>analysis<|message|>a1<|end|>"
      "<|start|>assistant<|channel|>final<|message|>f1<|end|><|start|>user<|message|>q2<|end|>"
      "<|start|>assistant<|channel|>analysis<|message|>a2<|end|><|start|>assistant<|channel|>final<|message|>f2<|end|>";
  CHECK(conv(ms, false) == kept_all);
  // Only a1 precedes the first final message; a2 comes after it and stays.
  CHECK(conv(ms, true) ==
        "<|start|>user<|message|>q1<|end|><|start|>assistant<|channel|>final<|message|>f1<|end|>"
        "<|start|>user<|message|>q2<|end|><|start|>assistant<|channel|>analysis<|message|>a2<|end|>"
        "<|start|>assistant<|channel|>final<|message|>f2<|end|>");
  // Last assistant message is a tool call: its reasoning stays.
  std::vector<Message> call{msg(Role::user, nullptr, "q"), msg(Role::assistant, "analysis", "think")};
  Message c = msg(Role::assistant, "commentary", "{}");
  c.recipient = "functions.f";
  call.push_back(c);
  CHECK(conv(call, true) == conv(call, false));
  CHECK(conv(call, true).find("think") != std::string::npos);
}

TEST_CASE("render: training ends a final answer with <|return|>", "[harmony]") {
  std::vector<Message> ms{msg(Role::user, nullptr, "q"), msg(Role::assistant, "final", "a")};
  CHECK(pieces_text(render_for_training(ms, {})) ==
        "<|start|>user<|message|>q<|end|><|start|>assistant<|channel|>final<|message|>a<|return|>");
  ms.back().channel = "analysis";
  CHECK(pieces_text(render_for_training(ms, {})) == conv(ms, false));
  CHECK(pieces_text(render_for_completion(ms, Role::assistant, {})) == conv(ms, false) + "<|start|>assistant");
}

TEST_CASE("render: system content sections and the function-tools line", "[harmony]") {
  auto ms = conversation_from_json(Json::parse(R"([
    {"role":"system","content":[{"type":"system_content","model_identity":"I am M.",
      "reasoning_effort":"low","knowledge_cutoff":"2024-06",
      "channel_config":{"valid_channels":["analysis","final"],"channel_required":false}}]},
    {"role":"developer","content":[{"type":"developer_content","instructions":"Be brief.",
      "tools":{"functions":{"tools":[{"name":"ping","description":"Ping it."}]}}}]}])"));
  CHECK(conv(ms, false) ==
        "<|start|>system<|message|>I am M.\nKnowledge cutoff: 2024-06\n\nReasoning: low\n\n"
        "# Valid channels: analysis, final.\nCalls to these tools must go to the commentary channel: 'functions'.<|end|>"
        "<|start|>developer<|message|># Instructions\n\nBe brief.\n\n# Tools\n\n## functions\n\n"
        "namespace functions {\n\n// Ping it.\ntype ping = () => any;\n\n} // namespace functions<|end|>");
  // An empty functions namespace declares no function tools.
  std::get<DeveloperContent>(ms[1].content[0]).tools->at("functions").tools.clear();
  CHECK_FALSE(conversation_has_function_tools(ms));
  CHECK(conv(ms, false).find("Calls to these tools") == std::string::npos);
  // No channels configured: no channel section at all.
  std::get<SystemContent>(ms[0].content[0]).channel_config->valid_channels.clear();
  CHECK(conv(ms, false).find("# Valid channels") == std::string::npos);
}

TEST_CASE("render: namespaces are sorted by name whatever the JSON order", "[harmony]") {
  auto ms = conversation_from_json(Json::parse(R"([{"role":"system","content":[{"type":"system_content",
    "tools":{"zeta":{"name":"zeta","description":"Z prose."},"alpha":{"name":"alpha","description":"A prose."}}}]}])"));
  CHECK(conv(ms, false) ==
        "<|start|>system<|message|># Tools\n\n## alpha\n\nA prose.\n\n## zeta\n\nZ prose.<|end|>");
}

TEST_CASE("render: response formats close the developer message", "[harmony]") {
  auto ms = conversation_from_json(Json::parse(R"([{"role":"developer","content":[{"type":"developer_content",
    "instructions":"Be brief.","response_formats":[{"name":"answer","description":"The answer",
    "schema":{"type":"object","properties":{"x":{"type":"number"}}}}]}]}])"));
  CHECK(conv(ms, false) ==
        "<|start|>developer<|message|># Instructions\n\nBe brief.\n\n# Response Formats\n\n## answer\n\n"
        "// The answer\n{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\"}}}<|end|>");
}

TEST_CASE("render: tokens keep special-looking user text as plain text", "[harmony]") {
  auto tok = test::harmony_tokenizer();
  Message m = Message::text(Role::user, "say <|end|> now");
  auto tokens = pieces_tokens(*tok, render_message(m, {}));
  const uint32_t end = *tok->special_id("<|end|>");
  CHECK(std::count(tokens.begin(), tokens.end(), end) == 1);
  CHECK(tokens.back() == end);
  // Every text piece is encoded on its own: same ids as the whole text with specials allowed.
  Message call = Message::text(Role::assistant, "{\"location\": \"Tokyo\"}");
  call.recipient = "functions.get_weather";
  call.channel = "commentary";
  call.content_type = "<|constrain|>json";
  auto pieces = render_message(call, {});
  CHECK(pieces_tokens(*tok, pieces) == tok->encode_with_specials(pieces_text(pieces)));
}
