#include "libgptoss/tokenizer/byte_level.hpp"

#include <array>
#include <cstdint>

namespace gptoss::tokenizer {
namespace {

constexpr bool is_printable_byte(unsigned b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
}

struct Alphabet {
  std::array<uint16_t, 256> byte_to_cp{};
  std::array<int16_t, 324> cp_to_byte{};  // -1 = not in the alphabet
  constexpr Alphabet() {
    for (auto& v : cp_to_byte) v = -1;
    unsigned next = 256;
    for (unsigned b = 0; b < 256; ++b) {
      byte_to_cp[b] = static_cast<uint16_t>(is_printable_byte(b) ? b : next++);
      cp_to_byte[byte_to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};
constexpr Alphabet kAlphabet;

}  // namespace

bool append_byte_level_decoded(std::string_view encoded, std::string& out) {
  const auto* p = reinterpret_cast<const unsigned char*>(encoded.data());
  const auto* end = p + encoded.size();
  while (p < end) {
    unsigned cp;
    if (p[0] < 0x80) {
      cp = *p++;
    } else if ((p[0] & 0xE0) == 0xC0 && end - p >= 2 && (p[1] & 0xC0) == 0x80) {
      // The alphabet only reaches U+0143, so two-byte sequences are all we accept.
      cp = ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu);
      if (cp < 0x80) return false;  // overlong
      p += 2;
    } else {
      return false;
    }
    if (cp >= kAlphabet.cp_to_byte.size() || kAlphabet.cp_to_byte[cp] < 0) return false;
    out.push_back(static_cast<char>(kAlphabet.cp_to_byte[cp]));
  }
  return true;
}

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    unsigned cp = kAlphabet.byte_to_cp[b];
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  return out;
}

}  // namespace gptoss::tokenizer
