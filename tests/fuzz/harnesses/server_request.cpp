// gptoss-server's request parsing (server/api): every input is a request body given
// to the three parsers the HTTP handlers call first — parse_responses_request,
// parse_chat_request, parse_completions_request — and, where one succeeds, to what the
// Responses and Chat handlers do next before the engine: harmony_conversation (the prompt's
// Harmony JSON, rendered with the real tokenizer) and constraint_spec (compiled into the
// output grammar when the request brings tools or a JSON Schema format).
//
// Properties:
//  - a parse returns, or throws ApiError 400 "invalid_request_error" with a message (at most
//    kMaxMessageBytes: messages quote outside values by an excerpt) whose error JSON dumps;
//    anything else escaping becomes a 500 "Internal server error" in the handler;
//  - a parsed request's parts the server echoes or stores (Responses input items, tools,
//    text, metadata, ...) dump, as the handler's response does;
//  - the conversation renders (success, or invalid_argument, which the handler turns into a
//    400), the grammar compiles or fails with invalid_argument / unsupported_argument (a 400)
//    — never internal.
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "api/api_error.hpp"
#include "api/harmony_conversation.hpp"
#include "api/request.hpp"
#include "support/fuzz_support.hpp"

using namespace gptoss;
using namespace gptoss_server;

namespace {

constexpr size_t kMaxMessageBytes = 1024;

void check_api_error(const ApiError& e, const char* parser) {
  const std::string where = std::string(parser) + ": " + e.what();
  GPTOSS_FUZZ_CHECK(e.status() == 400 && e.type() == "invalid_request_error", where);
  const std::string message = e.what();
  GPTOSS_FUZZ_CHECK(!message.empty() && message.size() <= kMaxMessageBytes,
                    std::string(parser) + ": message of " + std::to_string(message.size()) + " bytes");
  const json body = e.to_json();
  GPTOSS_FUZZ_CHECK(body["error"]["message"].is_string() && body["error"]["type"].is_string() &&
                        (body["error"]["param"].is_null() || body["error"]["param"].is_string()) &&
                        (body["error"]["code"].is_null() || body["error"]["code"].is_string()),
                    "error JSON shape: " + where);
  (void)body.dump(-1, ' ', false, json::error_handler_t::replace);  // as send_json does
}

// Runs `parse(body)`; true if it parsed, false for an ApiError. Anything else escapes to
// libFuzzer as an uncaught exception (a crash).
template <typename Parse>
bool parses(Parse parse, const char* parser) {
  try {
    parse();
    return true;
  } catch (const ApiError& e) {
    fuzz::trace(gptoss_status_invalid_argument, std::string(parser) + ": " + e.what());
    check_api_error(e, parser);
    return false;
  }
}

void dump(const json& v) { (void)v.dump(-1, ' ', false, json::error_handler_t::replace); }

// What the Responses and Chat handlers do with a parsed request before the engine.
void check_prompt_and_grammar(const ChatSetup& setup, const std::vector<ConversationItem>& items,
                              const char* items_param) {
  json conversation;
  if (!parses([&] { conversation = harmony_conversation(setup, items, "2025-06-28", items_param); },
              "harmony_conversation"))
    return;
  gptoss_tokenizer_t tok = fuzz::real_tokenizer();
  const std::string text = conversation.dump(-1, ' ', false, json::error_handler_t::replace);
  size_t n = 0;
  gptoss_status st = gptoss_harmony_render(tok, text.c_str(), nullptr, nullptr, 0, &n);
  fuzz::check_status(st, {gptoss_status_buffer_too_small, gptoss_status_invalid_argument},
                     "gptoss_harmony_render of the request's conversation");

  const bool schema_format = setup.format.type == ResponseFormat::Type::json_schema;
  if (setup.tools.empty() && !schema_format) return;  // the spec is then one of a few constants
  const std::string spec = constraint_spec(setup).dump(-1, ' ', false, json::error_handler_t::replace);
  gptoss_grammar_t g = nullptr;
  st = gptoss_grammar_create_harmony(tok, spec.c_str(), &g);
  fuzz::check_status(st, {gptoss_status_invalid_argument, gptoss_status_unsupported_argument},
                     "gptoss_grammar_create_harmony of the request's tools and format");
  if (st == gptoss_status_success) gptoss_grammar_release(g);
}

}  // namespace

GPTOSS_FUZZ_INITIALIZE_WITH_REAL_TOKENIZER()

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);

  ResponsesRequest responses;
  if (parses([&] { responses = parse_responses_request(body); }, "parse_responses_request")) {
    for (const json* v : {&responses.input_items, &responses.tools_echo, &responses.tool_choice_echo,
                          &responses.text_echo, &responses.reasoning_echo, &responses.metadata,
                          &responses.truncation, &responses.user})
      dump(*v);
    check_prompt_and_grammar(responses.setup, responses.input, "input");
  }

  ChatRequest chat;
  if (parses([&] { chat = parse_chat_request(body); }, "parse_chat_request")) {
    GPTOSS_FUZZ_CHECK(chat.n >= 1, "chat n < 1");
    check_prompt_and_grammar(chat.setup, chat.messages, "messages");
  }

  CompletionsRequest completions;
  if (parses([&] { completions = parse_completions_request(body); }, "parse_completions_request")) {
    GPTOSS_FUZZ_CHECK(!completions.prompts.empty() && completions.n >= 1, "completions without prompts");
    GPTOSS_FUZZ_CHECK(completions.options.stop.size() <= 4, "more than 4 stop strings");
  }
  return 0;
}
