#include "libgptoss/constrain/json_numbers.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace gptoss::constrain {
namespace {

constexpr size_t kDefaultDigits = 16;
constexpr int kMaxExponent = 400;  // beyond any double

Regex digits(size_t min, size_t max) { return re_repeat(re_range('0', '9'), uint32_t(min), uint32_t(max)); }

int compare_ints(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

std::string increment(std::string s) {
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != '9') {
      ++s[i];
      return s;
    }
    s[i] = '0';
  }
  return "1" + s;
}

std::string decrement(std::string s) {  // s > 0
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != '0') {
      --s[i];
      break;
    }
    s[i] = '9';
  }
  size_t nz = s.find_first_not_of('0');
  return nz == std::string::npos ? "0" : s.substr(nz);
}

// Digit strings of the same length n in [lo, hi] (leading zeros allowed inside).
Regex same_length_range(const std::string& lo, const std::string& hi) {
  const size_t n = lo.size();
  if (lo.find_first_not_of('0') == std::string::npos && hi.find_first_not_of('9') == std::string::npos)
    return digits(n, n);  // without this the recursion below doubles at every digit
  if (n == 1) return re_range(uint8_t(lo[0]), uint8_t(hi[0]));
  if (lo[0] == hi[0]) return re_concat({re_byte(uint8_t(lo[0])), same_length_range(lo.substr(1), hi.substr(1))});
  std::vector<Regex> parts;
  parts.push_back(re_concat({re_byte(uint8_t(lo[0])), same_length_range(lo.substr(1), std::string(n - 1, '9'))}));
  if (lo[0] + 1 <= hi[0] - 1)
    parts.push_back(re_concat({re_range(uint8_t(lo[0] + 1), uint8_t(hi[0] - 1)), digits(n - 1, n - 1)}));
  parts.push_back(re_concat({re_byte(uint8_t(hi[0])), same_length_range(std::string(n - 1, '0'), hi.substr(1))}));
  return re_alt(std::move(parts));
}

// Decimal integers without leading zeros in [lo, hi].
Regex int_range(const std::string& lo, const std::string& hi) {
  if (compare_ints(lo, hi) > 0) return re_nothing();
  if (lo.size() == hi.size()) return same_length_range(lo, hi);
  std::vector<Regex> parts;
  parts.push_back(same_length_range(lo, std::string(lo.size(), '9')));
  for (size_t len = lo.size() + 1; len < hi.size(); ++len)
    parts.push_back(re_concat({re_range('1', '9'), digits(len - 1, len - 1)}));
  parts.push_back(same_length_range("1" + std::string(hi.size() - 1, '0'), hi));
  return re_alt(std::move(parts));
}

// Fraction digits F (0.F, F possibly empty) between optional bounds, compared as left-aligned
// digit strings; at most `max_digits` digits.
class FractionRange {
 public:
  FractionRange(const std::string* lo, bool lo_inclusive, const std::string* hi, bool hi_inclusive,
                size_t max_digits)
      : lo_(lo), hi_(hi), lo_incl_(lo_inclusive), hi_incl_(hi_inclusive), max_(max_digits) {}

  // "" or "." followed by the digits.
  Regex suffix() const {
    auto [empty_ok, nonempty] = rest(0, lo_ != nullptr, hi_ != nullptr);
    return re_alt({empty_ok ? re_empty() : re_nothing(), re_concat({re_byte('.'), nonempty})});
  }

 private:
  // Whether F may end at digit i, and the non-empty continuations, given whether F still
  // equals the bounds' digits so far.
  std::pair<bool, Regex> rest(size_t i, bool lo_tight, bool hi_tight) const {
    const size_t left = max_ - std::min(i, max_);
    if (!lo_tight && !hi_tight) return {true, left == 0 ? re_nothing() : digits(1, left)};
    bool end_ok = true;
    if (lo_tight) end_ok = end_ok && i >= lo_->size() && lo_incl_;
    if (hi_tight) end_ok = end_ok && (i < hi_->size() || hi_incl_);
    if (left == 0) return {end_ok, re_nothing()};
    const char a = lo_tight ? (i < lo_->size() ? (*lo_)[i] : '0') : '0';
    const char b = hi_tight ? (i < hi_->size() ? (*hi_)[i] : '0') : '9';
    std::vector<Regex> parts;
    for (char d = a; d <= b;) {
      const bool lt = lo_tight && d == a, ht = hi_tight && d == b;
      char e = d;
      while (e + 1 <= b && (lo_tight && e + 1 == a) == lt && (hi_tight && e + 1 == b) == ht) ++e;
      auto [more_end, more] = rest(i + 1, lt, ht);
      parts.push_back(re_concat(
          {re_range(uint8_t(d), uint8_t(e)), re_alt({more_end ? re_empty() : re_nothing(), more})}));
      d = char(e + 1);
    }
    return {end_ok, re_alt(std::move(parts))};
  }

  const std::string* lo_;
  const std::string* hi_;
  bool lo_incl_, hi_incl_;
  size_t max_;
};

// Non-negative numbers m with lo <= m (or <) and m <= hi (or <; no hi: below 10^16).
Regex magnitude(const Decimal& lo, bool lo_excl, const std::optional<Decimal>& hi, bool hi_excl, bool integer) {
  const std::string& a = lo.int_digits;
  const std::string b = hi ? hi->int_digits : std::string(std::max(kDefaultDigits, a.size()), '9');
  const std::string* alpha = &lo.frac_digits;
  const std::string* beta = hi ? &hi->frac_digits : nullptr;
  const size_t max_frac =
      integer ? 0 : std::max({kDefaultDigits, alpha->size() + 1, beta ? beta->size() + 1 : size_t(0)});
  const Regex any_fraction = FractionRange(nullptr, true, nullptr, true, max_frac).suffix();
  const int c = compare_ints(a, b);
  if (c > 0) return re_nothing();
  if (c == 0)
    return re_concat({re_literal(a), FractionRange(alpha, !lo_excl, beta, !hi_excl, max_frac).suffix()});
  std::vector<Regex> parts;
  parts.push_back(re_concat({re_literal(a), FractionRange(alpha, !lo_excl, nullptr, true, max_frac).suffix()}));
  const std::string a1 = increment(a), b1 = decrement(b);
  if (compare_ints(a1, b1) <= 0) parts.push_back(re_concat({int_range(a1, b1), any_fraction}));
  parts.push_back(re_concat({re_literal(b), hi ? FractionRange(nullptr, true, beta, !hi_excl, max_frac).suffix()
                                                : any_fraction}));
  return re_alt(std::move(parts));
}

Decimal negated(Decimal d) {
  d.negative = !d.negative;
  return d;
}

}  // namespace

std::optional<Decimal> Decimal::parse(const std::string& text) {
  size_t i = 0;
  Decimal d;
  if (i < text.size() && text[i] == '-') {
    d.negative = true;
    ++i;
  }
  std::string mantissa;
  size_t int_len = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) mantissa += text[i++], ++int_len;
  if (int_len == 0) return std::nullopt;
  if (i < text.size() && text[i] == '.') {
    ++i;
    size_t start = mantissa.size();
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) mantissa += text[i++];
    if (mantissa.size() == start) return std::nullopt;
  }
  long exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool neg = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) neg = text[i++] == '-';
    size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && exponent <= kMaxExponent)
      exponent = exponent * 10 + (text[i++] - '0');
    if (i == start || exponent > kMaxExponent) return std::nullopt;
    if (neg) exponent = -exponent;
  }
  if (i != text.size()) return std::nullopt;
  const long point = long(int_len) + exponent;
  std::string int_part, frac_part;
  if (point <= 0) {
    frac_part = std::string(size_t(-point), '0') + mantissa;
  } else if (size_t(point) >= mantissa.size()) {
    int_part = mantissa + std::string(size_t(point) - mantissa.size(), '0');
  } else {
    int_part = mantissa.substr(0, size_t(point));
    frac_part = mantissa.substr(size_t(point));
  }
  size_t nz = int_part.find_first_not_of('0');
  d.int_digits = nz == std::string::npos ? "0" : int_part.substr(nz);
  size_t last = frac_part.find_last_not_of('0');
  d.frac_digits = last == std::string::npos ? "" : frac_part.substr(0, last + 1);
  if (d.is_zero()) d.negative = false;
  return d;
}

int compare(const Decimal& a, const Decimal& b) {
  const bool an = a.negative && !a.is_zero(), bn = b.negative && !b.is_zero();
  if (an != bn) return an ? -1 : 1;
  int c = compare_ints(a.int_digits, b.int_digits);
  if (c == 0) c = a.frac_digits < b.frac_digits ? -1 : a.frac_digits > b.frac_digits ? 1 : 0;
  return an ? -c : c;
}

Regex json_number_regex(const NumberBounds& bounds, bool integer) {
  const Decimal zero;
  std::vector<Regex> parts;
  // x >= 0 (written without a sign).
  {
    const bool lo_positive = bounds.lo && compare(*bounds.lo, zero) >= 0;
    const Decimal lo = lo_positive ? *bounds.lo : zero;
    const bool lo_excl = lo_positive && bounds.lo_exclusive;
    bool empty = false;
    if (bounds.hi) {
      const int c = compare(*bounds.hi, lo);
      empty = c < 0 || (c == 0 && (lo_excl || bounds.hi_exclusive));
    }
    if (!empty) parts.push_back(magnitude(lo, lo_excl, bounds.hi, bounds.hi_exclusive, integer));
  }
  // x < 0, as "-" and its magnitude m > 0.
  if (!bounds.lo || compare(*bounds.lo, zero) < 0) {
    const bool hi_negative = bounds.hi && compare(*bounds.hi, zero) < 0;
    const Decimal lo_m = hi_negative ? negated(*bounds.hi) : zero;
    const bool lo_m_excl = hi_negative ? bounds.hi_exclusive : true;
    std::optional<Decimal> hi_m;
    if (bounds.lo) hi_m = negated(*bounds.lo);
    bool empty = false;
    if (hi_m) {
      const int c = compare(*hi_m, lo_m);
      empty = c < 0 || (c == 0 && (lo_m_excl || bounds.lo_exclusive));
    }
    if (!empty) parts.push_back(re_concat({re_byte('-'), magnitude(lo_m, lo_m_excl, hi_m, bounds.lo_exclusive, integer)}));
  }
  return re_alt(std::move(parts));
}

}  // namespace gptoss::constrain
