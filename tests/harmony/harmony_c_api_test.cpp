// The gptoss_harmony_* C API: rendering JSON conversations, errors that name the bad field,
// the capacity protocol, and the streaming parser handle.
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "gptoss.h"
#include "harmony/harmony_test_support.hpp"

namespace {

struct TokenizerHandle {
  gptoss_tokenizer_t h = nullptr;
  TokenizerHandle() { REQUIRE(gptoss_tokenizer_create_from_file(gptoss::test::tokenizer_json().c_str(), &h) == gptoss_status_success); }
  ~TokenizerHandle() { gptoss_tokenizer_release(h); }
};

gptoss_status render(gptoss_tokenizer_t tok, const char* json, std::vector<uint32_t>* out,
                     const gptoss_harmony_render_options* options = nullptr) {
  size_t n = 0;
  gptoss_status s = gptoss_harmony_render(tok, json, options, nullptr, 0, &n);
  if (s != gptoss_status_buffer_too_small && s != gptoss_status_success) return s;
  out->assign(n, 0);
  return gptoss_harmony_render(tok, json, options, out->data(), out->size(), &n);
}

// Renders `json` expecting invalid_argument whose message mentions `field`.
void require_rejected(gptoss_tokenizer_t tok, const char* json, const char* field) {
  std::vector<uint32_t> out;
  INFO(json);
  REQUIRE(render(tok, json, &out) == gptoss_status_invalid_argument);
  std::string message = gptoss_get_last_error_message();
  INFO(message);
  CHECK(message.find(field) != std::string::npos);
}

}  // namespace

TEST_CASE("harmony C API: render a conversation", "[harmony][c-api]") {
  TokenizerHandle tok;
  const char* json = R"({"messages":[{"role":"user","content":"Hello"}]})";
  std::vector<uint32_t> tokens;
  REQUIRE(render(tok.h, json, &tokens) == gptoss_status_success);
  CHECK(tokens == gptoss::test::harmony_tokens("<|start|>user<|message|>Hello<|end|><|start|>assistant"));

  gptoss_harmony_render_options options;
  REQUIRE(gptoss_harmony_render_options_init(&options) == gptoss_status_success);
  CHECK(options.struct_size == sizeof(options));
  CHECK(options.for_completion == 1);
  CHECK(options.auto_drop_analysis == 1);
  options.for_completion = 0;
  REQUIRE(render(tok.h, R"([{"role":"user","content":[{"type":"text","text":"Hello"}]}])", &tokens, &options) ==
          gptoss_status_success);
  CHECK(tokens == gptoss::test::harmony_tokens("<|start|>user<|message|>Hello<|end|>"));

  // auto_drop_analysis is on by default and can be turned off.
  const char* cot = R"([{"role":"user","content":"q"},
    {"role":"assistant","channel":"analysis","content":"think"},
    {"role":"assistant","channel":"final","content":"a"}])";
  REQUIRE(render(tok.h, cot, &tokens) == gptoss_status_success);
  CHECK(tokens == gptoss::test::harmony_tokens(
                      "<|start|>user<|message|>q<|end|><|start|>assistant<|channel|>final<|message|>a<|end|><|start|>assistant"));
  gptoss_harmony_render_options_init(&options);
  options.auto_drop_analysis = 0;
  REQUIRE(render(tok.h, cot, &tokens, &options) == gptoss_status_success);
  CHECK(tokens.size() > gptoss::test::harmony_tokens("<|start|>user<|message|>q<|end|>").size() + 10);
}

TEST_CASE("harmony C API: capacity protocol", "[harmony][c-api]") {
  TokenizerHandle tok;
  const char* json = R"([{"role":"user","content":"Hello"}])";
  size_t n = 0;
  REQUIRE(gptoss_harmony_render(tok.h, json, nullptr, nullptr, 0, &n) == gptoss_status_buffer_too_small);
  REQUIRE(n > 2);
  std::vector<uint32_t> small(n - 1, 7);
  size_t m = 0;
  CHECK(gptoss_harmony_render(tok.h, json, nullptr, small.data(), small.size(), &m) == gptoss_status_buffer_too_small);
  CHECK(m == n);
  CHECK(gptoss_harmony_render(tok.h, json, nullptr, nullptr, 5, &m) == gptoss_status_invalid_argument);
}

TEST_CASE("harmony C API: malformed conversations name the field", "[harmony][c-api]") {
  TokenizerHandle tok;
  require_rejected(tok.h, "{\"messages\": [", "malformed JSON");
  // A number beyond a double was an internal error (tests/fuzz/corpus/harmony_render/
  // regress-number-overflow).
  require_rejected(tok.h, R"([{"role":"user","content":"hi"}, 1e400])", "number overflow");
  require_rejected(tok.h, R"({"messages": 3})", "messages");
  require_rejected(tok.h, R"({"msgs": []})", "msgs");
  require_rejected(tok.h, R"([{"role":"bot","content":"x"}])", "messages[0].role");
  require_rejected(tok.h, R"([{"content":"x"}])", "messages[0].role");
  require_rejected(tok.h, R"([{"role":"user","content":5}])", "messages[0].content");
  require_rejected(tok.h, R"([{"role":"user"}])", "messages[0].content");
  require_rejected(tok.h, R"([{"role":"user","content":"x","channel":7}])", "messages[0].channel");
  require_rejected(tok.h, R"([{"role":"user","content":"x","colour":"red"}])", "messages[0].colour");
  require_rejected(tok.h, R"([{"role":"tool","content":"x"}])", "messages[0].name");
  require_rejected(tok.h, R"([{"role":"user","content":[{"type":"image"}]}])", "messages[0].content[0].type");
  require_rejected(tok.h, R"([{"role":"user","content":[{"type":"text"}]}])", "messages[0].content[0].text");
  require_rejected(tok.h, R"([{"role":"user","content":[{"type":"system_content"}]}])", "messages[0].content[0]");
  require_rejected(tok.h, R"([{"role":"system","content":[{"type":"system_content","reasoning_effort":"max"}]}])",
                   "messages[0].content[0].reasoning_effort");
  require_rejected(tok.h, R"([{"role":"system","content":[{"type":"system_content","channel_config":{"valid_channels":"final"}}]}])",
                   "messages[0].content[0].channel_config.valid_channels");
  require_rejected(tok.h, R"([{"role":"developer","content":[{"type":"developer_content","tools":{"functions":{"tools":[{"description":"d"}]}}}]}])",
                   "messages[0].content[0].tools.functions.tools[0].name");
  require_rejected(tok.h, R"([{"role":"developer","content":[{"type":"developer_content","tools":{"functions":{"tools":[{"name":"f","parameters":"x"}]}}}]}])",
                   "messages[0].content[0].tools.functions.tools[0].parameters");
}

// A schema nested deeply enough overflowed the stack in the TypeScript renderer and in
// nlohmann's dump (tests/fuzz/corpus/harmony_render/regress-deep-*); now the parse refuses
// nesting beyond kMaxJsonDepth (128) and anything within it renders.
TEST_CASE("harmony C API: deeply nested JSON is refused, not a stack overflow", "[harmony][c-api]") {
  TokenizerHandle tok;
  auto nested_schema = [](size_t depth) {
    std::string s;
    for (size_t i = 0; i < depth; ++i) s += R"({"type":"array","items":)";
    s += R"({"type":"string"})";
    return s + std::string(depth, '}');
  };
  auto with_parameters = [](const std::string& schema) {
    return R"([{"role":"developer","content":[{"type":"developer_content","tools":{"functions":)"
           R"({"tools":[{"name":"f","parameters":)" + schema + "}]}}}]}]";
  };
  const std::string deep_array = std::string(100000, '[') + std::string(100000, ']');
  const std::string deep_format =
      R"([{"role":"developer","content":[{"type":"developer_content","response_formats":)"
      R"([{"name":"x","schema":{"a":)" + deep_array + "}}]}]}]";
  for (const std::string& json : {with_parameters(nested_schema(100000)), deep_format}) {
    std::vector<uint32_t> out;
    REQUIRE(render(tok.h, json.c_str(), &out) == gptoss_status_invalid_argument);
    CHECK(std::string(gptoss_get_last_error_message()) ==
          "conversation_json: JSON nested deeper than 128 levels");
  }
  std::vector<uint32_t> tokens;
  REQUIRE(render(tok.h, with_parameters(nested_schema(100)).c_str(), &tokens) == gptoss_status_success);
  std::string brackets;
  for (int i = 0; i < 100; ++i) brackets += "[]";
  const std::string text = gptoss::test::harmony_tokenizer()->decode(tokens);
  CHECK(text.find("type f = (_: string" + brackets + ") => any;") != std::string::npos);
}

TEST_CASE("harmony C API: NULL arguments and bad options", "[harmony][c-api]") {
  TokenizerHandle tok;
  size_t n = 0;
  CHECK(gptoss_harmony_render(nullptr, "[]", nullptr, nullptr, 0, &n) == gptoss_status_invalid_argument);
  CHECK(gptoss_harmony_render(tok.h, nullptr, nullptr, nullptr, 0, &n) == gptoss_status_invalid_argument);
  CHECK(gptoss_harmony_render(tok.h, "[]", nullptr, nullptr, 0, nullptr) == gptoss_status_invalid_argument);
  gptoss_harmony_render_options options{};
  CHECK(gptoss_harmony_render(tok.h, "[]", &options, nullptr, 0, &n) == gptoss_status_invalid_argument);
  CHECK((gptoss_harmony_render_options_init)(nullptr) == gptoss_status_invalid_argument);
  gptoss_harmony_parser_t p = nullptr;
  CHECK(gptoss_harmony_parser_create(nullptr, nullptr, 1, &p) == gptoss_status_invalid_argument);
  CHECK(gptoss_harmony_parser_create(tok.h, nullptr, 1, nullptr) == gptoss_status_invalid_argument);
  CHECK(gptoss_harmony_parser_create(tok.h, "robot", 1, &p) == gptoss_status_invalid_argument);
  CHECK(std::string(gptoss_get_last_error_message()).find("first_role") != std::string::npos);
  CHECK(p == nullptr);
  CHECK(gptoss_harmony_parser_release(nullptr) == gptoss_status_success);
  CHECK(gptoss_harmony_parser_process_token(nullptr, 1) == gptoss_status_invalid_argument);
  const char* json = nullptr;
  CHECK(gptoss_harmony_parser_finish(nullptr, &json) == gptoss_status_invalid_argument);
  CHECK(gptoss_harmony_parser_get_messages(nullptr, &json) == gptoss_status_invalid_argument);
}

TEST_CASE("harmony C API: streaming parser", "[harmony][c-api]") {
  TokenizerHandle tok;
  gptoss_harmony_parser_t p = nullptr;
  REQUIRE(gptoss_harmony_parser_create(tok.h, "assistant", 1, &p) == gptoss_status_success);
  for (uint32_t t : gptoss::test::harmony_tokens("<|channel|>analysis<|message|>hmm<|end|><|start|>assistant<|channel|>final<|message|>"))
    REQUIRE(gptoss_harmony_parser_process_token(p, t) == gptoss_status_success);
  std::string streamed;
  for (uint32_t t : gptoss::test::harmony_tokens("Hi there")) {
    REQUIRE(gptoss_harmony_parser_process_token(p, t) == gptoss_status_success);
    gptoss_harmony_state state;
    state.struct_size = sizeof(state);
    REQUIRE(gptoss_harmony_parser_get_current(p, &state) == gptoss_status_success);
    CHECK(std::string(state.role) == "assistant");
    CHECK(std::string(state.channel) == "final");
    CHECK(state.recipient == nullptr);
    CHECK(state.content_type == nullptr);
    CHECK(std::strlen(state.content_delta) == state.content_delta_size);
    CHECK(state.num_messages == 1);
    streamed += state.content_delta;
  }
  CHECK(streamed == "Hi there");
  const char* json = nullptr;
  REQUIRE(gptoss_harmony_parser_get_messages(p, &json) == gptoss_status_success);
  CHECK(nlohmann::json::parse(json).size() == 1);
  REQUIRE(gptoss_harmony_parser_finish(p, &json) == gptoss_status_success);
  auto messages = nlohmann::json::parse(json);
  REQUIRE(messages.size() == 2);
  CHECK(messages[0]["channel"] == "analysis");
  CHECK(messages[0]["content"][0]["text"] == "hmm");
  CHECK(messages[1]["role"] == "assistant");
  CHECK(messages[1]["recipient"].is_null());
  CHECK(messages[1]["content"] == nlohmann::json::parse(R"([{"type":"text","text":"Hi there"}])"));
  gptoss_harmony_state small;
  small.struct_size = 1;
  CHECK(gptoss_harmony_parser_get_current(p, &small) == gptoss_status_invalid_argument);
  CHECK(gptoss_harmony_parser_release(p) == gptoss_status_success);
}

TEST_CASE("harmony C API: strict parser errors, then invalid_state", "[harmony][c-api]") {
  TokenizerHandle tok;
  gptoss_harmony_parser_t p = nullptr;
  REQUIRE(gptoss_harmony_parser_create(tok.h, nullptr, 1, &p) == gptoss_status_success);
  auto text = gptoss::test::harmony_tokens("oops");
  CHECK(gptoss_harmony_parser_process_token(p, text[0]) == gptoss_status_invalid_argument);
  CHECK(gptoss_harmony_parser_process_token(p, 200006) == gptoss_status_invalid_state);
  const char* json = nullptr;
  CHECK(gptoss_harmony_parser_finish(p, &json) == gptoss_status_invalid_state);
  gptoss_harmony_parser_release(p);

  // Tolerant: the same input is text.
  REQUIRE(gptoss_harmony_parser_create(tok.h, nullptr, 0, &p) == gptoss_status_success);
  for (uint32_t t : text) CHECK(gptoss_harmony_parser_process_token(p, t) == gptoss_status_success);
  CHECK(gptoss_harmony_parser_process_token(p, 0xFFFFFFFFu) == gptoss_status_success);
  REQUIRE(gptoss_harmony_parser_finish(p, &json) == gptoss_status_success);
  auto messages = nlohmann::json::parse(json);
  REQUIRE(messages.size() == 1);
  CHECK(messages[0]["content"][0]["text"].get<std::string>().rfind("oops", 0) == 0);
  gptoss_harmony_parser_release(p);
}
