// gptoss_harmony_render on arbitrary conversation JSON (the C API's JSON entry). Input: the
// JSON text, passed as the C string it is up to its first NUL byte.
//
// Properties:
//  - success or invalid_argument with a message, never internal, in all four option
//    combinations; the capacity protocol holds (capacity 0 and n-1: buffer_too_small with the
//    count; n: success, nothing written past n);
//  - every id is in the vocabulary; rendering for completion is the conversation followed by
//    <|start|> and the tokens of "assistant";
//  - a conversation of plain text messages whose header fields are single words (the domain
//    where the format is lossless) parses back through the strict parser to the same messages.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/fuzz_support.hpp"

using namespace gptoss;
using Json = nlohmann::ordered_json;  // as the library reads it (duplicate keys resolve alike)

namespace {

std::vector<uint32_t> render(gptoss_tokenizer_t tok, const char* conversation, bool for_completion,
                             bool auto_drop, bool* ok) {
  gptoss_harmony_render_options o;
  gptoss_harmony_render_options_init(&o);
  o.for_completion = for_completion;
  o.auto_drop_analysis = auto_drop;
  size_t n = SIZE_MAX;
  gptoss_status st = gptoss_harmony_render(tok, conversation, &o, nullptr, 0, &n);
  fuzz::check_status(st, {gptoss_status_buffer_too_small, gptoss_status_invalid_argument},
                     "gptoss_harmony_render");
  *ok = st != gptoss_status_invalid_argument;
  if (st == gptoss_status_success) GPTOSS_FUZZ_CHECK(n == 0, "success with capacity 0 but tokens");
  if (st != gptoss_status_buffer_too_small) return {};
  std::vector<uint32_t> tokens(n + 1, UINT32_MAX);
  size_t m = SIZE_MAX;
  st = gptoss_harmony_render(tok, conversation, &o, tokens.data(), n - 1, &m);
  GPTOSS_FUZZ_CHECK(st == gptoss_status_buffer_too_small && m == n, "capacity n-1");
  st = gptoss_harmony_render(tok, conversation, &o, tokens.data(), n, &m);
  fuzz::check_status(st, {}, "gptoss_harmony_render with capacity n");
  GPTOSS_FUZZ_CHECK(m == n && tokens[n] == UINT32_MAX, "count changed or written past capacity");
  tokens.resize(n);
  for (uint32_t t : tokens) GPTOSS_FUZZ_CHECK(t < 201088, "rendered id outside the vocabulary");
  return tokens;
}

// A header field that renders and parses back unchanged: a non-empty run of characters that
// are neither whitespace nor part of the Harmony markup.
bool simple_word(const Json& v) {
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  if (s.empty() || s.rfind("to=", 0) == 0) return false;
  for (unsigned char c : s)
    if (!(std::isalnum(c) || c == '.' || c == '_' || c == '-' || c == ':' || c == '/')) return false;
  return true;
}

bool is_role_name(const std::string& s) {
  return s == "system" || s == "developer" || s == "user" || s == "assistant" || s == "tool";
}

// The messages the strict parser must return for `conversation`, or null when it is outside
// the lossless domain.
Json expected_parse(const std::string& conversation) {
  Json j = Json::parse(conversation, nullptr, /*allow_exceptions=*/false);
  const Json* list = j.is_object() && j.contains("messages") ? &j["messages"] : &j;
  if (!list->is_array()) return nullptr;
  Json out = Json::array();
  for (const Json& m : *list) {
    auto get = [&](const char* k) -> Json { return m.contains(k) ? m[k] : Json(nullptr); };
    const Json role = get("role"), name = get("name"), recipient = get("recipient");
    const Json channel = get("channel"), content_type = get("content_type");
    if (!role.is_string()) return nullptr;
    const bool tool = role == "tool";
    if (tool ? !simple_word(name) || is_role_name(name) || recipient.is_null() : !name.is_null())
      return nullptr;
    if (!(recipient.is_null() || (simple_word(recipient) && recipient != "all"))) return nullptr;
    if (!(channel.is_null() || simple_word(channel))) return nullptr;
    // A content type needs a recipient before it, or it parses as the recipient.
    if (!(content_type.is_null() || (simple_word(content_type) && !recipient.is_null()))) return nullptr;
    std::string text;
    const Json content = get("content");
    if (content.is_string()) {
      text = content.get<std::string>();
    } else if (content.is_array()) {
      for (const Json& part : content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
            !part["text"].is_string())
          return nullptr;
        text += part["text"].get<std::string>();
      }
    } else {
      return nullptr;
    }
    out.push_back({{"role", role}, {"name", tool ? name : Json(nullptr)}, {"recipient", recipient},
                   {"channel", channel}, {"content_type", content_type},
                   {"content", Json::array({{{"type", "text"}, {"text", text}}})}});
  }
  return out;
}

void check_round_trip(gptoss_tokenizer_t tok, const std::string& conversation,
                      const std::vector<uint32_t>& tokens) {
  const Json expected = expected_parse(conversation);
  if (expected.is_null()) return;
  gptoss_harmony_parser_t p = nullptr;
  fuzz::check_status(gptoss_harmony_parser_create(tok, nullptr, 1, &p), {}, "parser_create");
  for (uint32_t t : tokens)
    fuzz::check_status(gptoss_harmony_parser_process_token(p, t), {}, "strict parse of a rendering");
  const char* out = nullptr;
  fuzz::check_status(gptoss_harmony_parser_finish(p, &out), {}, "strict finish of a rendering");
  const Json parsed = Json::parse(out);
  gptoss_harmony_parser_release(p);
  GPTOSS_FUZZ_CHECK(parsed == expected,
                    "rendered then parsed: " + parsed.dump() + " expected " + expected.dump());
}

}  // namespace

GPTOSS_FUZZ_INITIALIZE_WITH_REAL_TOKENIZER()

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gptoss_tokenizer_t tok = fuzz::real_tokenizer();
  static const std::vector<uint32_t> tail = [&] {
    std::vector<uint32_t> t(1);
    fuzz::check_status(gptoss_tokenizer_get_special_token_id(tok, gptoss_special_token_start, &t[0]),
                       {}, "start id");
    uint32_t ids[8];
    size_t n = 0;
    fuzz::check_status(gptoss_tokenizer_encode(tok, "assistant", 9, 0, ids, 8, &n), {}, "encode");
    t.insert(t.end(), ids, ids + n);
    return t;
  }();
  const char* text = reinterpret_cast<const char*>(data);
  const std::string conversation(text, strnlen(text, size));

  for (bool auto_drop : {true, false}) {
    bool ok_conv = false, ok_completion = false;
    const auto conv = render(tok, conversation.c_str(), false, auto_drop, &ok_conv);
    auto completion = render(tok, conversation.c_str(), true, auto_drop, &ok_completion);
    GPTOSS_FUZZ_CHECK(ok_conv == ok_completion, "for_completion changed whether it renders");
    if (!ok_conv) continue;
    GPTOSS_FUZZ_CHECK(completion.size() == conv.size() + tail.size() &&
                          std::equal(conv.begin(), conv.end(), completion.begin()) &&
                          std::equal(tail.begin(), tail.end(), completion.begin() + long(conv.size())),
                      "rendering for completion is not the conversation + <|start|>assistant");
    if (!auto_drop) check_round_trip(tok, conversation, conv);
  }
  return 0;
}
