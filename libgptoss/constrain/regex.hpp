#pragma once
// Regular expressions over bytes, as a tree that the grammar compilers build directly (there is
// no pattern syntax to parse): byte sets, concatenation, alternation and bounded repetition.
// Compiled to DFAs by dfa.hpp; these trees are the lexemes of a grammar.
#include <bitset>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace gptoss::constrain {

struct RegexNode;
using Regex = std::shared_ptr<const RegexNode>;

struct RegexNode {
  enum class Kind { bytes, concat, alt, repeat };
  Kind kind = Kind::bytes;
  std::bitset<256> set;       // bytes: the bytes matched (one byte of input)
  std::vector<Regex> parts;   // concat, alt: the operands; repeat: the one operand
  uint32_t min = 0, max = 0;  // repeat: count range; max == kUnbounded for no limit
  static constexpr uint32_t kUnbounded = 0xffffffffu;
};

// The empty string (concat of nothing) and the empty language (alt of nothing).
Regex re_empty();
Regex re_nothing();
Regex re_bytes(const std::bitset<256>& set);
Regex re_byte(uint8_t b);
Regex re_range(uint8_t lo, uint8_t hi);
Regex re_literal(std::string_view text);
Regex re_concat(std::vector<Regex> parts);
Regex re_alt(std::vector<Regex> parts);
Regex re_repeat(Regex r, uint32_t min, uint32_t max);
inline Regex re_star(Regex r) { return re_repeat(std::move(r), 0, RegexNode::kUnbounded); }
inline Regex re_opt(Regex r) { return re_repeat(std::move(r), 0, 1); }

bool re_is_nothing(const Regex& r);

// One JSON string, quotes included: unescaped characters other than '"', '\' and controls,
// the escapes of RFC 8259 (\u escapes of UTF-16 surrogates excluded: the raw character is the
// way to write those), and only well-formed UTF-8 (RFC 3629).
Regex re_json_string();
// Same, but no backslash at all: a key whose decoded value is its raw bytes.
Regex re_json_string_without_escapes();
// Any bytes, any length (Harmony free text).
Regex re_any_bytes();

}  // namespace gptoss::constrain
