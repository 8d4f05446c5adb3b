// The Harmony streaming parser (gptoss_harmony_parser_*), strict and tolerant, on arbitrary
// token sequences. Input: one config byte (bits 0-2: first_role NULL, system, developer, user,
// assistant, tool, NULL, NULL; bit 3: 4-byte token ids instead of 3-byte), then token ids,
// little-endian (3-byte ids reach every vocabulary id; 4-byte ones any uint32_t).
//
// Properties, checked against an independent model of where each token lands (between
// messages, in a header, in content) and an independent UTF-8 decoder:
//  - tolerant: every call succeeds; only content tokens (and the <|message|> that may start
//    content with header words) report a content delta; a message closes (num_messages + 1)
//    exactly where the model says; every message's content ends with the exact text of its
//    content tokens (lossy UTF-8 per run of decodable tokens, one U+FFFD per run of ids outside
//    the vocabulary, in stream order) and begins with the deltas streamed for it: no text is
//    lost, reordered or made up;
//  - strict: succeeds or fails with invalid_argument and a message, then invalid_state for
//    every later call;
//  - where strict succeeds and no control token sat where strict mode keeps it as text,
//    tolerant returns the same messages;
//  - get_messages mid-stream is a prefix of the final messages; the JSON is an array of
//    six-key messages with one text part.
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/fuzz_support.hpp"
#include "support/utf8_reference.hpp"

using namespace gptoss;
using nlohmann::json;

namespace {

constexpr std::string_view kFffd = "\xEF\xBF\xBD";
const char* const kFirstRoles[8] = {nullptr, "system", "developer", "user", "assistant", "tool",
                                    nullptr, nullptr};

struct Specials {
  uint32_t start, message, end, ret, call;
  bool is_stop(uint32_t t) const { return t == end || t == ret || t == call; }
};

uint32_t special(gptoss_tokenizer_t tok, gptoss_special_token which) {
  uint32_t id = 0;
  fuzz::check_status(gptoss_tokenizer_get_special_token_id(tok, which, &id), {}, "special id");
  return id;
}

std::optional<std::string_view> token_bytes(gptoss_tokenizer_t tok, uint32_t id) {
  if (id == 201088) return std::string_view("<|reserved_201088|>");
  const void* p = nullptr;
  size_t n = 0;
  if (gptoss_tokenizer_decode(tok, id, &p, &n) != gptoss_status_success) return std::nullopt;
  return std::string_view(static_cast<const char*>(p), n);
}

// What one parser reported, token by token.
struct Run {
  std::vector<gptoss_status> status;  // per token
  std::vector<std::string> delta;     // per token
  std::vector<size_t> num_messages;   // per token
  gptoss_status finish_status = gptoss_status_success;
  json messages;                      // from finish (or get_messages after a failure)
  json mid_messages;                  // get_messages after half of the tokens
  bool failed() const {
    for (auto s : status)
      if (s != gptoss_status_success) return true;
    return finish_status != gptoss_status_success;
  }
};

json parse_messages(const char* text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  GPTOSS_FUZZ_CHECK(j.is_array(), std::string("messages JSON is not an array: ") + text);
  for (const json& m : j) {
    GPTOSS_FUZZ_CHECK(m.is_object() && m.size() == 6, m.dump());
    GPTOSS_FUZZ_CHECK(m["content"].is_array() && m["content"].size() == 1 &&
                          m["content"][0]["text"].is_string(), m.dump());
  }
  return j;
}

Run run_parser(gptoss_tokenizer_t tok, const char* first_role, bool strict,
               const std::vector<uint32_t>& tokens) {
  gptoss_harmony_parser_t p = nullptr;
  fuzz::check_status(gptoss_harmony_parser_create(tok, first_role, strict, &p), {}, "parser_create");
  Run r;
  bool failed = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i == tokens.size() / 2) {
      const char* mid = nullptr;
      fuzz::check_status(gptoss_harmony_parser_get_messages(p, &mid), {}, "get_messages");
      r.mid_messages = parse_messages(mid);
    }
    const gptoss_status st = gptoss_harmony_parser_process_token(p, tokens[i]);
    if (!strict) fuzz::check_status(st, {}, "tolerant process_token");
    else if (failed) GPTOSS_FUZZ_CHECK(st == gptoss_status_invalid_state, "strict after a failure");
    else fuzz::check_status(st, {gptoss_status_invalid_argument}, "strict process_token");
    failed = failed || st != gptoss_status_success;
    gptoss_harmony_state s;
    std::memset(&s, 0xAB, sizeof s);
    s.struct_size = sizeof s;
    fuzz::check_status(gptoss_harmony_parser_get_current(p, &s), {}, "get_current");
    GPTOSS_FUZZ_CHECK(s.content_delta != nullptr && s.content_delta[s.content_delta_size] == '\0',
                      "content_delta is not a NUL-terminated string of content_delta_size bytes");
    r.status.push_back(st);
    r.delta.emplace_back(s.content_delta, s.content_delta_size);
    r.num_messages.push_back(s.num_messages);
  }
  const char* out = nullptr;
  r.finish_status = gptoss_harmony_parser_finish(p, &out);
  if (!strict) fuzz::check_status(r.finish_status, {}, "tolerant finish");
  else if (failed)
    GPTOSS_FUZZ_CHECK(r.finish_status == gptoss_status_invalid_state, "strict finish after a failure");
  else fuzz::check_status(r.finish_status, {gptoss_status_invalid_argument}, "strict finish");
  if (r.finish_status != gptoss_status_success)
    fuzz::check_status(gptoss_harmony_parser_get_messages(p, &out), {}, "get_messages");
  r.messages = parse_messages(out);
  gptoss_harmony_parser_release(p);
  return r;
}

// A content message as the model expects it: where it closed and its exact text.
struct ExpectedMessage {
  size_t closed_at;  // token index; tokens.size() = at the end of the stream
  std::string body;  // the text of its content tokens
  std::string streamed;
};

// Tolerant parsing as a state machine over token kinds only (docs/harmony.md, "Tolerant
// mode"); checks the per-token reports of `r` and returns the content messages.
std::vector<ExpectedMessage> check_tolerant(gptoss_tokenizer_t tok, const Specials& sp, bool first_role,
                                            const std::vector<uint32_t>& tokens, const Run& r) {
  enum class Where { between, header, content } where = first_role ? Where::header : Where::between;
  std::vector<ExpectedMessage> out;
  std::string pending, body, streamed;
  bool bad_run = false;
  auto close_content = [&](size_t at) {
    body += fuzz::utf8_lossy_reference(pending);
    if (bad_run) body += kFffd;
    out.push_back({at, body, streamed});
    pending.clear(), body.clear(), streamed.clear();
    bad_run = false;
  };
  for (size_t i = 0; i < tokens.size(); ++i) {
    const uint32_t t = tokens[i];
    const size_t before = i > 0 ? r.num_messages[i - 1] : 0;
    const size_t after = r.num_messages[i];
    bool may_stream = false;
    const std::string at = "token " + std::to_string(i) + " (id " + std::to_string(t) + ")";
    // Text between messages: a missing <|start|>, the header begins here.
    if (where == Where::between && t != sp.start && !sp.is_stop(t)) where = Where::header;
    if (where == Where::between) {
      if (t == sp.start) where = Where::header;
      GPTOSS_FUZZ_CHECK(after == before, at + ": a message appeared between messages");
    } else if (where == Where::header) {
      if (t == sp.message) {
        where = Where::content;
        may_stream = true;  // header words the parser could not place start the content
      } else if (sp.is_stop(t) || t == sp.start) {
        where = sp.is_stop(t) ? Where::between : Where::header;
        GPTOSS_FUZZ_CHECK(after - before <= 1, at + ": a header closed into several messages");
      } else {
        GPTOSS_FUZZ_CHECK(after == before, at + ": a message appeared inside a header");
      }
    } else if (sp.is_stop(t) || t == sp.start) {
      close_content(i);
      where = sp.is_stop(t) ? Where::between : Where::header;
      GPTOSS_FUZZ_CHECK(after == before + 1, at + ": closing content did not add one message");
    } else {
      may_stream = true;
      GPTOSS_FUZZ_CHECK(after == before, at + ": a message appeared inside content");
      if (auto b = token_bytes(tok, t)) {
        if (bad_run) body += fuzz::utf8_lossy_reference(pending) + std::string(kFffd), pending.clear();
        bad_run = false;
        pending += *b;
      } else {
        bad_run = true;
      }
    }
    if (where == Where::content && may_stream) streamed += r.delta[i];
    else GPTOSS_FUZZ_CHECK(r.delta[i].empty(), at + ": a content delta outside content");
  }
  if (where == Where::content) close_content(tokens.size());
  return out;
}

// Whether strict mode would keep a control token as text (a stop or <|start|> in a header, a
// <|start|> in content), where the two modes differ by design.
bool strict_keeps_control_text(const Specials& sp, bool first_role, const std::vector<uint32_t>& tokens) {
  enum class Where { between, header, content } where = first_role ? Where::header : Where::between;
  for (uint32_t t : tokens) {
    const bool control = t == sp.start || sp.is_stop(t);
    if (where == Where::between) where = Where::header;  // anything but <|start|> fails strict
    else if (where == Where::header && t == sp.message) where = Where::content;
    else if (where == Where::header && control) return true;
    else if (where == Where::content && t == sp.start) return true;
    else if (where == Where::content && control) where = Where::between;
  }
  return false;
}

bool is_prefix(const json& a, const json& b) {
  if (a.size() > b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

}  // namespace

GPTOSS_FUZZ_INITIALIZE_WITH_REAL_TOKENIZER()

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gptoss_tokenizer_t tok = fuzz::real_tokenizer();
  static const Specials sp{special(tok, gptoss_special_token_start),
                           special(tok, gptoss_special_token_message),
                           special(tok, gptoss_special_token_end),
                           special(tok, gptoss_special_token_return),
                           special(tok, gptoss_special_token_call)};
  fuzz::Bytes in(data, size);
  const uint32_t config = in.take(1);
  const char* first_role = kFirstRoles[config & 7];
  const size_t width = (config & 8) ? 4 : 3;
  std::vector<uint32_t> tokens;
  while (!in.empty()) tokens.push_back(in.take(width));

  const Run tolerant = run_parser(tok, first_role, false, tokens);
  const Run strict = run_parser(tok, first_role, true, tokens);

  const auto expected = check_tolerant(tok, sp, first_role != nullptr, tokens, tolerant);
  for (const ExpectedMessage& e : expected) {
    const size_t index = e.closed_at < tokens.size() ? tolerant.num_messages[e.closed_at] - 1
                                                     : tolerant.messages.size() - 1;
    GPTOSS_FUZZ_CHECK(index < tolerant.messages.size(), "a content message is missing");
    const std::string content = tolerant.messages[index]["content"][0]["text"];
    const std::string where = "message " + std::to_string(index) + " content \"" + content + "\"";
    GPTOSS_FUZZ_CHECK(content.size() >= e.body.size() &&
                          content.compare(content.size() - e.body.size(), e.body.size(), e.body) == 0,
                      where + " does not end with its tokens' text \"" + e.body + "\"");
    GPTOSS_FUZZ_CHECK(content.compare(0, e.streamed.size(), e.streamed) == 0,
                      where + " does not begin with the streamed deltas \"" + e.streamed + "\"");
  }
  GPTOSS_FUZZ_CHECK(is_prefix(tolerant.mid_messages, tolerant.messages), "tolerant mid-stream messages");
  if (!strict.failed()) {
    GPTOSS_FUZZ_CHECK(is_prefix(strict.mid_messages, strict.messages), "strict mid-stream messages");
    if (!strict_keeps_control_text(sp, first_role != nullptr, tokens))
      GPTOSS_FUZZ_CHECK(strict.messages == tolerant.messages,
                        "strict succeeded but tolerant differs: " + strict.messages.dump() + " vs " +
                            tolerant.messages.dump());
  }
  return 0;
}
