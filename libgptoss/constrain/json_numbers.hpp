#pragma once
// JSON numbers within bounds as regular languages, decided digit by digit on exact decimals,
// so a bound like "maximum": 0.1 is never crossed by rounding. Generated numbers have no
// exponent, an integer part of at most 16 digits unless a bound needs more, and (type
// "number") at most 16 fraction digits unless a bound needs more.
#include <optional>
#include <string>

#include "libgptoss/constrain/regex.hpp"

namespace gptoss::constrain {

// An exact decimal: digits without leading zeros ("0" for zero) and fraction digits without
// trailing zeros.
struct Decimal {
  bool negative = false;
  std::string int_digits = "0";
  std::string frac_digits;

  // From a JSON number's text: "12", "-0.5", "1e-7", "2.5E+3". nullopt if it is not one.
  static std::optional<Decimal> parse(const std::string& text);
  bool is_zero() const { return int_digits == "0" && frac_digits.empty(); }
};

struct NumberBounds {
  std::optional<Decimal> lo, hi;
  bool lo_exclusive = false, hi_exclusive = false;
};

// The language of JSON numbers (integers only if `integer`) within `bounds`; re_nothing() if
// no number fits.
Regex json_number_regex(const NumberBounds& bounds, bool integer);

// Exact comparison (-1, 0, 1).
int compare(const Decimal& a, const Decimal& b);

}  // namespace gptoss::constrain
