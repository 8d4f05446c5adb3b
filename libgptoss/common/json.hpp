#pragma once
// JSON that comes from outside the library (safetensors headers, config.json, the shard index,
// conversations): parsed with a nesting limit, and quoted in error messages by an excerpt.
//
// Why a limit: nlohmann parses iteratively, but dumping, copying and comparing a value recurse,
// and so does the JSON Schema renderer; a 10 MB header or a 200 KB conversation of
// "[[[[...]]]]" exhausted the stack (a crash instead of an error).
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "libgptoss/common/error.hpp"

namespace gptoss {

// Deeper than any real document (tool parameter schemas nest a few dozen levels), shallow
// enough for every recursion over a value, with ASan's larger frames too.
inline constexpr int kMaxJsonDepth = 128;

// `s` cut to about `max_bytes` (on a character boundary) with "..." and the full length, so
// that a message quoting outside input does not grow with it.
inline std::string excerpt(std::string_view s, size_t max_bytes = 160) {
  if (s.size() <= max_bytes) return std::string(s);
  while (max_bytes > 0 && (static_cast<unsigned char>(s[max_bytes]) & 0xC0) == 0x80) --max_bytes;
  return fmt::format("{}... ({} bytes)", s.substr(0, max_bytes), s.size());
}

// Parses `input` (text or a stream) into a Json (nlohmann::json or ordered_json). Throws
// gptoss::Error(`status`) whose message starts with `what`: malformed JSON (naming the byte),
// a number beyond the range of a double (1e400), or nesting deeper than kMaxJsonDepth.
template <typename Json, typename Input>
Json parse_json(Input&& input, gptoss_status status, std::string_view what) {
  const typename Json::parser_callback_t limit_depth = [&](int depth, typename Json::parse_event_t,
                                                           Json&) {
    if (depth > kMaxJsonDepth)
      fail(status, "{}: JSON nested deeper than {} levels", what, kMaxJsonDepth);
    return true;
  };
  try {
    return Json::parse(std::forward<Input>(input), limit_depth);
  } catch (const nlohmann::json::parse_error& e) {
    fail(status, "{}: malformed JSON (byte {}): {}", what, e.byte, excerpt(e.what()));
  } catch (const nlohmann::json::exception& e) {  // out_of_range 406: a number overflows
    fail(status, "{}: malformed JSON: {}", what, excerpt(e.what()));
  }
}

// The file at `path`, read whole (nlohmann reads a stream a character at a time), parsed as
// above; a file that cannot be read is an error with `status` too.
template <typename Json>
Json parse_json_file(const std::string& path, gptoss_status status) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(status, "cannot open {}", path);
  std::ostringstream text;
  text << in.rdbuf();  // an empty file leaves "" (and sets failbit on `text`, not `in`)
  if (in.bad()) fail(status, "cannot read {}", path);
  return parse_json<Json>(std::move(text).str(), status, path);
}

// excerpt() of v.dump(): error messages quote values without growing with the input.
template <typename Json>
std::string json_excerpt(const Json& v, size_t max_bytes = 64) {
  return excerpt(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), max_bytes);
}

}  // namespace gptoss
