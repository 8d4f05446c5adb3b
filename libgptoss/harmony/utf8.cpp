#include "libgptoss/harmony/utf8.hpp"

#include <cstdint>

namespace gptoss::harmony {
namespace {

// Length of a valid character at s[i]; 0 and *invalid_len set otherwise
// (*invalid_len == 0 means "truncated at end of input").
size_t char_len(std::string_view s, size_t i, size_t* invalid_len) {
  auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  if (c < 0x80) return 1;
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) need = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    *invalid_len = 1;
    return 0;
  }
  for (size_t k = 1; k < need; ++k) {
    if (i + k >= s.size()) {
      *invalid_len = 0;
      return 0;
    }
    const uint8_t x = b(i + k);
    const bool ok = k == 1 ? (x >= lo && x <= hi) : (x >= 0x80 && x <= 0xBF);
    if (!ok) {
      *invalid_len = k;
      return 0;
    }
  }
  return need;
}

}  // namespace

Utf8Check check_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t bad = 0;
    size_t n = char_len(s, i, &bad);
    if (n == 0) return Utf8Check{i, bad == 0 ? std::nullopt : std::optional<size_t>(bad)};
    i += n;
  }
  return Utf8Check{s.size(), std::nullopt};
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  while (!s.empty()) {
    Utf8Check c = check_utf8(s);
    out.append(s.substr(0, c.valid_up_to));
    if (c.valid_up_to == s.size()) break;
    out.append(kReplacementChar);
    // A truncated sequence at the end is one invalid subpart too.
    s.remove_prefix(c.valid_up_to + (c.error_len ? *c.error_len : s.size() - c.valid_up_to));
  }
  return out;
}

bool is_unicode_space_at(std::string_view s, size_t i, size_t* len) {
  size_t bad = 0;
  size_t n = char_len(s, i, &bad);
  *len = n == 0 ? 1 : n;
  if (n == 0) return false;
  uint32_t cp = static_cast<uint8_t>(s[i]);
  if (n > 1) {
    cp &= (0xFFu >> (n + 1));
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
  }
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

}  // namespace gptoss::harmony
