#pragma once
// An independent UTF-8 decoder for fuzz oracles: lossy decoding with one U+FFFD per maximal
// invalid subpart (Unicode 15, section 3.9, table 3-7), the rule docs/harmony.md promises.
// Written from the standard, not from libgptoss/harmony/utf8.cpp, so the two check each other.
#include <cstdint>
#include <string>
#include <string_view>

namespace gptoss::fuzz {

inline std::string utf8_lossy_reference(std::string_view s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const auto at = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
    const uint8_t lead = at(i);
    size_t len = 0;
    uint8_t lo = 0x80, hi = 0xBF;  // range of the second byte
    if (lead <= 0x7F) len = 1;
    else if (lead >= 0xC2 && lead <= 0xDF) len = 2;
    else if (lead == 0xE0) len = 3, lo = 0xA0;
    else if (lead == 0xED) len = 3, hi = 0x9F;
    else if (lead >= 0xE1 && lead <= 0xEF) len = 3;
    else if (lead == 0xF0) len = 4, lo = 0x90;
    else if (lead == 0xF4) len = 4, hi = 0x8F;
    else if (lead >= 0xF1 && lead <= 0xF3) len = 4;
    size_t good = len == 0 ? 0 : 1;  // bytes of the sequence that fit the table so far
    while (good > 0 && good < len && i + good < s.size()) {
      const uint8_t b = at(i + good);
      const bool ok = good == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
      if (!ok) break;
      ++good;
    }
    if (len > 0 && good == len) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      i += good > 0 ? good : 1;
    }
  }
  return out;
}

}  // namespace gptoss::fuzz
