// gptoss-conformance harmony DIR: runs every case of DIR/cases.json (format
// "harmony-conformance-cases/1", see its README.md): rendering, parsing, streaming parsing with
// checkpoints, and the encode / decode / is_special checks, against the real tokenizer.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "libgptoss/common/error.hpp"
#include "libgptoss/harmony/message_json.hpp"
#include "libgptoss/harmony/renderer.hpp"
#include "libgptoss/harmony/stream_parser.hpp"
#include "libgptoss/harmony/utf8.hpp"
#include "libgptoss/tokenizer/tokenizer.hpp"
#include "tools/conformance/conformance.hpp"

namespace gptoss::conformance {
namespace {

using harmony::Json;
using Tokens = std::vector<uint32_t>;

// Collects the reasons a case failed; a case passes when it has none.
struct Check {
  std::vector<std::string> problems;
  template <typename A, typename B>
  void equal(const A& got, const B& want, const std::string& what) {
    if (!(got == want)) problems.push_back(fmt::format("{}: got {}, want {}", what, show(got), show(want)));
  }
  void that(bool ok, const std::string& what) {
    if (!ok) problems.push_back(what);
  }
  static std::string show(const std::string& s) {
    return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  static std::string show(const Tokens& t) { return fmt::format("[{}]", fmt::join(t, ", ")); }
  template <typename T>
  static std::string show(const T& v) {
    return fmt::format("{}", v);
  }
};

struct Runner {
  std::shared_ptr<const Tokenizer> tok;
  std::string dir;

  // Upstream loads text files with trim_end() after CRLF -> LF.
  std::string text_file(const std::string& name) const {
    std::ifstream in(dir + "/" + name, std::ios::binary);
    if (!in) fail(gptoss_status_io, "cannot read {}/{}", dir, name);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s, raw = ss.str();
    for (size_t i = 0; i < raw.size(); ++i)
      if (!(raw[i] == '\r' && i + 1 < raw.size() && raw[i + 1] == '\n')) s += raw[i];
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    return s;
  }

  static bool is_token_list(const std::string& s) {
    return !s.empty() && s.find_first_not_of("0123456789 \t\n") == std::string::npos;
  }

  static Tokens token_list(const std::string& s) {
    Tokens out;
    std::istringstream in(s);
    for (uint64_t v; in >> v;) out.push_back(static_cast<uint32_t>(v));
    return out;
  }

  std::string decode(const Tokens& ids) const {
    std::string out;
    for (uint32_t id : ids) {
      auto b = harmony::harmony_token_bytes(*tok, id);
      if (!b) fail(gptoss_status_invalid_argument, "token id {} is outside the vocabulary", id);
      out += *b;
    }
    return out;
  }

  void render(const Json& c, Check& check) const {
    const std::string kind = c["kind"];
    const Json& in = c["input"];
    const Json& want = c["expected"];
    harmony::Pieces pieces;
    harmony::ConversationConfig config;
    std::vector<harmony::Message> messages;
    if (kind == "render_message") {
      messages.push_back(harmony::message_from_json(in["message"], "message"));
      bool has_tools = in["render_options"]["conversation_has_function_tools"];
      pieces = harmony::render_message(messages[0], {has_tools});
    } else {
      config.auto_drop_analysis = in["config"]["auto_drop_analysis"];
      messages = harmony::conversation_from_json(in["messages"]);
      if (kind == "render_for_completion") {
        auto role = harmony::role_from_name(in["next_turn_role"].get<std::string>());
        if (!role) fail(gptoss_status_invalid_argument, "unknown next_turn_role");
        pieces = harmony::render_for_completion(messages, *role, config);
      } else if (kind == "render_conversation") {
        pieces = harmony::render_conversation(messages, config);
      } else {
        pieces = harmony::render_for_training(messages, config);
      }
      if (c.contains("derived_render_options"))
        check.equal(harmony::conversation_has_function_tools(messages),
                    c["derived_render_options"]["conversation_has_function_tools"].get<bool>(),
                    "conversation_has_function_tools");
    }
    const std::string text = harmony::pieces_text(pieces);
    const Tokens tokens = harmony::pieces_tokens(*tok, pieces);
    check.equal(text, want["text"].get<std::string>(), "text");
    check.equal(tokens, want["tokens"].get<Tokens>(), "tokens");
    // The file holds what upstream compares it with: the decoded rest when upstream drops the
    // last token (render_tool_response_message), the whole text otherwise.
    if (want.contains("text_file"))
      check.equal(text_file(want["text_file"]), want.value("text_without_last_token", want["text"].get<std::string>()),
                  "text_file");
    if (want.contains("prefix_text"))
      check.that(text.rfind(want["prefix_text"].get<std::string>(), 0) == 0, "text does not start with prefix_text");
    if (want.contains("text_without_last_token") && !tokens.empty())
      check.equal(decode(Tokens(tokens.begin(), tokens.end() - 1)), want["text_without_last_token"].get<std::string>(),
                  "text_without_last_token");
    if (want.contains("same_as_render_conversation_of_single_message"))
      check.equal(harmony::pieces_tokens(*tok, harmony::render_conversation(messages, config)) == tokens,
                  want["same_as_render_conversation_of_single_message"].get<bool>(),
                  "same_as_render_conversation_of_single_message");
    if (want.contains("render_conversation_text"))
      check.equal(harmony::pieces_text(harmony::render_conversation(messages, config)),
                  want["render_conversation_text"].get<std::string>(), "render_conversation_text");
  }

  // Checks the input's redundant forms (text, text_file) against its tokens.
  void parse_input(const Json& in, Check& check) const {
    const Tokens tokens = in["tokens"].get<Tokens>();
    if (in.contains("text"))
      check.equal(tok->encode_with_specials(in["text"].get<std::string>()), tokens, "encode(input.text)");
    if (in.contains("text_file")) {
      std::string file = text_file(in["text_file"]);
      if (!in.contains("text") && is_token_list(file)) check.equal(token_list(file), tokens, "text_file ids");
      else if (in.contains("text")) check.equal(file, in["text"].get<std::string>(), "text_file");
      else check.equal(tok->encode_with_specials(file), tokens, "encode(text_file)");
    }
  }

  static bool same_json(const Json& a, const Json& b) {
    return nlohmann::json::parse(a.dump(-1, ' ', false, Json::error_handler_t::replace)) ==
           nlohmann::json::parse(b.dump(-1, ' ', false, Json::error_handler_t::replace));
  }

  static Json state_json(const harmony::StreamParser& p, const std::string& concatenated) {
    const auto& delta = p.last_content_delta();
    return {{"last_content_delta", delta ? Json(*delta) : Json(nullptr)},
            {"current_content", p.current_content()},
            {"concatenated_deltas", concatenated}};
  }

  static void compare_state(const Json& got, const Json& want, const std::string& where, Check& check) {
    for (const char* key : {"last_content_delta", "current_content", "concatenated_deltas"})
      if (want.contains(key)) check.that(got[key] == want[key], fmt::format("{} {}: got {}, want {}", where, key,
                                                                            got[key].dump(), want[key].dump()));
  }

  void parse(const Json& c, Check& check) const {
    const std::string kind = c["kind"];
    const Json& in = c["input"];
    const Json& want = c["expected"];
    parse_input(in, check);
    const Tokens tokens = in["tokens"].get<Tokens>();
    std::optional<harmony::Role> role;
    if (!in["role"].is_null()) role = harmony::role_from_name(in["role"].get<std::string>());
    const bool streaming = kind == "streaming_parse";
    const bool eos = !streaming || in["eos"].get<bool>();
    harmony::StreamParser parser(tok, role, in["strict"].get<bool>());

    std::vector<Json> states;  // state after each token (index = tokens processed - 1)
    std::string concatenated, error;
    try {
      for (uint32_t t : tokens) {
        parser.process(t);
        if (parser.last_content_delta()) concatenated += *parser.last_content_delta();
        states.push_back(state_json(parser, concatenated));
      }
      if (eos) parser.process_eos();
    } catch (const Error& e) {
      error = e.what();
    }
    if (want.value("error", false)) {
      check.that(!error.empty(), "expected an error, parsing succeeded");
      return;
    }
    if (!error.empty()) {
      check.that(false, "unexpected error: " + error);
      return;
    }
    const Json got = harmony::messages_to_json(parser.messages());
    check.that(same_json(got, want["messages"]),
               fmt::format("messages: got {}, want {}", got.dump(), want["messages"].dump()));
    if (want.contains("message_count")) check.equal(parser.messages().size(), want["message_count"].get<size_t>(), "message_count");
    if (want.contains("decoded_text")) check.equal(decode(tokens), want["decoded_text"].get<std::string>(), "decoded_text");
    for (const Json& cp : want.value("checkpoints", Json::array())) {
      size_t n = cp["after_tokens"];
      if (n == 0 || n > states.size()) {
        check.that(false, fmt::format("checkpoint after {} tokens is out of range", n));
        continue;
      }
      compare_state(states[n - 1], cp, fmt::format("after {} tokens", n), check);
    }
    if (want.contains("final_state")) compare_state(state_json(parser, concatenated), want["final_state"], "final_state", check);
  }

  void encode(const Json& c, Check& check) const {
    const Json& in = c["input"];
    const Json& want = c["expected"];
    const std::string text = in["text"];
    Tokens tokens;
    std::string error;
    try {
      const Json& allowed = in["allowed_special"];
      const Json& disallowed = in["disallowed_special"];
      std::vector<std::string> allowed_list;
      if (allowed.is_string()) {  // "all"
        tokens = tok->encode_with_specials(text);
      } else {
        allowed_list = allowed.get<std::vector<std::string>>();
        // tiktoken: an explicit disallowed list raises only for the specials it names.
        if (disallowed.is_array())
          for (const auto& name : disallowed.get<std::vector<std::string>>())
            if (text.find(name) != std::string::npos)
              fail(gptoss_status_invalid_argument, "disallowed special token {} in text", name);
        tokens = tok->encode(text, allowed_list, disallowed.is_string());
      }
    } catch (const Error& e) {
      error = e.what();
    }
    if (want.value("error", false)) {
      check.that(!error.empty(), "expected an error, encoding succeeded");
      return;
    }
    check.that(error.empty(), "unexpected error: " + error);
    check.equal(tokens, want["tokens"].get<Tokens>(), "tokens");
    if (want.contains("roundtrip_text")) check.equal(decode(tokens), want["roundtrip_text"].get<std::string>(), "roundtrip_text");
  }

  void decode_case(const Json& c, Check& check) const {
    const std::string kind = c["kind"];
    const Tokens tokens = c["input"]["tokens"].get<Tokens>();
    const Json& want = c["expected"];
    if (kind == "is_special_token") {
      std::vector<bool> got;
      for (uint32_t t : tokens) got.push_back(tok->is_special(t));
      check.equal(Json(got), want["is_special"], "is_special");
      return;
    }
    std::string bytes, error;
    try {
      bytes = decode(tokens);
      if (kind == "decode_utf8" && !harmony::is_valid_utf8(bytes))
        fail(gptoss_status_invalid_argument, "Invalid utf-8 in decoded tokens");
    } catch (const Error& e) {
      error = e.what();
    }
    if (want.value("error", false)) {
      check.that(!error.empty(), "expected an error, decoding succeeded");
      return;
    }
    check.that(error.empty(), "unexpected error: " + error);
    const std::string text = kind == "decode_lossy" ? harmony::utf8_lossy(bytes) : bytes;
    check.equal(text, want["text"].get<std::string>(), "text");
    if (want.contains("contains"))
      check.that(text.find(want["contains"].get<std::string>()) != std::string::npos, "text lacks `contains`");
  }

  // Returns false when the kind is unknown (the case counts as failed).
  bool run(const Json& c, Check& check) const {
    const std::string kind = c["kind"];
    if (kind.rfind("render_", 0) == 0) render(c, check);
    else if (kind == "parse_tokens" || kind == "streaming_parse") parse(c, check);
    else if (kind == "encode") encode(c, check);
    else if (kind == "decode_utf8" || kind == "decode_lossy" || kind == "is_special_token") decode_case(c, check);
    else return false;
    return true;
  }
};

}  // namespace

int run_harmony(const Args& args) {
  if (args.tokenizer_json.empty()) {
    std::fprintf(stderr, "harmony conformance needs --tokenizer-json PATH\n");
    std::printf("0 passed, 1 failed\n");
    return 1;
  }
  Runner runner{Tokenizer::from_json_file(args.tokenizer_json), args.dir};
  std::ifstream in(args.dir + "/cases.json", std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot open %s/cases.json\n", args.dir.c_str());
    std::printf("0 passed, 1 failed\n");
    return 1;
  }
  const Json doc = Json::parse(in);
  size_t passed = 0, failed = 0;
  for (const Json& c : doc.at("cases")) {
    const std::string name = c.value("name", "?"), kind = c.value("kind", "?");
    Check check;
    try {
      if (!runner.run(c, check)) check.that(false, "unknown kind, not run");
    } catch (const std::exception& e) {
      check.that(false, std::string("exception: ") + e.what());
    }
    if (check.problems.empty()) {
      ++passed;
    } else {
      ++failed;
      std::printf("FAIL %s (%s): %s\n", name.c_str(), kind.c_str(), fmt::format("{}", fmt::join(check.problems, "; ")).c_str());
    }
  }
  std::printf("%zu passed, %zu failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace gptoss::conformance
