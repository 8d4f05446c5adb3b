#pragma once
// UTF-8 checks with the semantics of Rust's Utf8Error and String::from_utf8_lossy (which the
// streaming parser's repair behaviour is defined by): an invalid sequence is replaced by one
// U+FFFD per maximal invalid subpart (Unicode 15, section 3.9 "U+FFFD substitution").
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gptoss::harmony {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

struct Utf8Check {
  size_t valid_up_to = 0;            // bytes that form complete, valid characters
  std::optional<size_t> error_len;   // length of the invalid subpart there; nullopt = the
                                     // input ends inside a character that may still complete
};
Utf8Check check_utf8(std::string_view bytes);
inline bool is_valid_utf8(std::string_view bytes) {
  return check_utf8(bytes).valid_up_to == bytes.size();
}
std::string utf8_lossy(std::string_view bytes);

// Unicode White_Space (Rust char::is_whitespace) of the character starting at s[i];
// sets *len to its byte length (1 for invalid bytes).
bool is_unicode_space_at(std::string_view s, size_t i, size_t* len);

}  // namespace gptoss::harmony
