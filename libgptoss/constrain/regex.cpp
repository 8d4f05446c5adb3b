#include "libgptoss/constrain/regex.hpp"

namespace gptoss::constrain {
namespace {

Regex make(RegexNode n) { return std::make_shared<const RegexNode>(std::move(n)); }

std::bitset<256> range_set(uint8_t lo, uint8_t hi) {
  std::bitset<256> s;
  for (unsigned b = lo; b <= hi; ++b) s.set(b);
  return s;
}

Regex hex() {
  std::bitset<256> s = range_set('0', '9') | range_set('a', 'f') | range_set('A', 'F');
  return re_bytes(s);
}

// Well-formed UTF-8 sequences of 2 to 4 bytes (RFC 3629, table 3-7 of Unicode).
Regex utf8_multibyte() {
  const Regex cont = re_range(0x80, 0xBF);
  return re_alt({
      re_concat({re_range(0xC2, 0xDF), cont}),
      re_concat({re_byte(0xE0), re_range(0xA0, 0xBF), cont}),
      re_concat({re_range(0xE1, 0xEC), cont, cont}),
      re_concat({re_byte(0xED), re_range(0x80, 0x9F), cont}),
      re_concat({re_range(0xEE, 0xEF), cont, cont}),
      re_concat({re_byte(0xF0), re_range(0x90, 0xBF), cont, cont}),
      re_concat({re_range(0xF1, 0xF3), cont, cont, cont}),
      re_concat({re_byte(0xF4), re_range(0x80, 0x8F), cont, cont}),
  });
}

Regex unescaped_ascii() {
  std::bitset<256> s = range_set(0x20, 0x7F);
  s.reset('"');
  s.reset('\\');
  return re_bytes(s);
}

Regex json_escape() {
  std::bitset<256> simple;
  for (char c : std::string_view("\"\\/bfnrt")) simple.set(static_cast<uint8_t>(c));
  // \uXXXX outside D800-DFFF.
  std::bitset<256> not_d = range_set('0', '9') | range_set('a', 'c') | range_set('A', 'C') |
                           range_set('e', 'f') | range_set('E', 'F');
  std::bitset<256> d;
  d.set('d');
  d.set('D');
  Regex u = re_concat({re_byte('u'), re_alt({re_concat({re_bytes(not_d), hex(), hex(), hex()}),
                                             re_concat({re_bytes(d), re_range('0', '7'), hex(), hex()})})});
  return re_concat({re_byte('\\'), re_alt({re_bytes(simple), u})});
}

}  // namespace

Regex re_empty() { return make({RegexNode::Kind::concat, {}, {}, 0, 0}); }
Regex re_nothing() { return make({RegexNode::Kind::alt, {}, {}, 0, 0}); }

Regex re_bytes(const std::bitset<256>& set) {
  if (set.none()) return re_nothing();
  return make({RegexNode::Kind::bytes, set, {}, 0, 0});
}

Regex re_byte(uint8_t b) {
  std::bitset<256> s;
  s.set(b);
  return re_bytes(s);
}

Regex re_range(uint8_t lo, uint8_t hi) { return re_bytes(range_set(lo, hi)); }

Regex re_literal(std::string_view text) {
  std::vector<Regex> parts;
  parts.reserve(text.size());
  for (char c : text) parts.push_back(re_byte(static_cast<uint8_t>(c)));
  return re_concat(std::move(parts));
}

bool re_is_nothing(const Regex& r) { return r->kind == RegexNode::Kind::alt && r->parts.empty(); }

Regex re_concat(std::vector<Regex> parts) {
  std::vector<Regex> flat;
  for (auto& p : parts) {
    if (re_is_nothing(p)) return re_nothing();
    if (p->kind == RegexNode::Kind::concat) flat.insert(flat.end(), p->parts.begin(), p->parts.end());
    else flat.push_back(std::move(p));
  }
  if (flat.size() == 1) return flat[0];
  return make({RegexNode::Kind::concat, {}, std::move(flat), 0, 0});
}

Regex re_alt(std::vector<Regex> parts) {
  std::vector<Regex> flat;
  for (auto& p : parts) {
    if (re_is_nothing(p)) continue;
    if (p->kind == RegexNode::Kind::alt) flat.insert(flat.end(), p->parts.begin(), p->parts.end());
    else flat.push_back(std::move(p));
  }
  if (flat.size() == 1) return flat[0];
  return make({RegexNode::Kind::alt, {}, std::move(flat), 0, 0});
}

Regex re_repeat(Regex r, uint32_t min, uint32_t max) {
  if (max == 0) return re_empty();
  if (re_is_nothing(r)) return min == 0 ? re_empty() : re_nothing();
  if (min == 1 && max == 1) return r;
  return make({RegexNode::Kind::repeat, {}, {std::move(r)}, min, max});
}

Regex re_json_string() {
  static const Regex s = re_concat(
      {re_byte('"'), re_star(re_alt({unescaped_ascii(), json_escape(), utf8_multibyte()})), re_byte('"')});
  return s;
}

Regex re_json_string_without_escapes() {
  static const Regex s =
      re_concat({re_byte('"'), re_star(re_alt({unescaped_ascii(), utf8_multibyte()})), re_byte('"')});
  return s;
}

Regex re_any_bytes() {
  static const Regex s = re_star(re_bytes(std::bitset<256>().set()));
  return s;
}

}  // namespace gptoss::constrain
