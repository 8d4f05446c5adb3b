// Number lexemes against exact arithmetic: every candidate string, valid or not, is accepted
// exactly when it is a number of the generated language (no leading zeros, no exponent, a
// digit after '.', no "-0") whose value lies within the bounds. Values are compared as
// integers scaled by 1000 (candidates and bounds have at most 3 fraction digits).
#include <catch2/catch.hpp>

#include <optional>
#include <random>

#include "constrain/constrain_test_support.hpp"
#include "libgptoss/constrain/dfa.hpp"
#include "libgptoss/constrain/json_numbers.hpp"

using namespace gptoss::constrain;
using gptoss::test::dfa_accepts;

namespace {

// Value x 1000 of a string in the generated syntax, or nullopt.
std::optional<int64_t> scaled(const std::string& s, bool integer) {
  size_t i = 0;
  bool neg = false;
  if (i < s.size() && s[i] == '-') neg = true, ++i;
  size_t digits_start = i;
  while (i < s.size() && isdigit((unsigned char)s[i])) ++i;
  const std::string ip = s.substr(digits_start, i - digits_start);
  if (ip.empty() || (ip.size() > 1 && ip[0] == '0')) return std::nullopt;
  std::string fp;
  if (i < s.size() && s[i] == '.') {
    if (integer) return std::nullopt;
    ++i;
    size_t f = i;
    while (i < s.size() && isdigit((unsigned char)s[i])) ++i;
    fp = s.substr(f, i - f);
    if (fp.empty()) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  while (fp.size() > 3 && fp.back() == '0') fp.pop_back();
  if (fp.size() > 3) return std::nullopt;  // the candidates never need more
  fp.resize(3, '0');
  int64_t v = std::stoll(ip) * 1000 + std::stoll(fp);
  if (neg && v == 0) return std::nullopt;  // "-0" is not generated
  return neg ? -v : v;
}

std::string decimal_text(int64_t v1000) {  // exact text of v/1000
  std::string sign = v1000 < 0 ? "-" : "";
  int64_t a = v1000 < 0 ? -v1000 : v1000;
  std::string frac = std::to_string(a % 1000);
  frac = std::string(3 - frac.size(), '0') + frac;
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return sign + std::to_string(a / 1000) + (frac.empty() ? "" : "." + frac);
}

}  // namespace

TEST_CASE("Decimal parses JSON number texts exactly", "[constrain][numbers]") {
  auto d = Decimal::parse("1.5E-3");
  REQUIRE(d);
  CHECK(d->int_digits == "0");
  CHECK(d->frac_digits == "0015");
  d = Decimal::parse("-2.50e2");
  CHECK((d->negative && d->int_digits == "250" && d->frac_digits.empty()));
  CHECK_FALSE(Decimal::parse("-0.0")->negative);
  CHECK(Decimal::parse("100")->int_digits == "100");
  for (const char* bad : {"", "-", "1.", ".5", "1e", "1e+", "abc", "1x", "1e999999"}) CHECK_FALSE(Decimal::parse(bad));
  CHECK(compare(*Decimal::parse("0.1"), *Decimal::parse("0.10")) == 0);
  CHECK(compare(*Decimal::parse("-0.5"), *Decimal::parse("0.01")) < 0);
  CHECK(compare(*Decimal::parse("9.99"), *Decimal::parse("10")) < 0);
  CHECK(compare(*Decimal::parse("-10"), *Decimal::parse("-9.5")) < 0);
}

TEST_CASE("number lexemes accept exactly the values within their bounds", "[constrain][numbers]") {
  std::mt19937 rng(5);
  std::vector<std::string> candidates = {"0", "-0", "00", "01", "-01", "1.", ".5", "+1", "1e2", "1E2", "-", "--1",
                                         "0.0", "-0.0", "0.000", "1.5000", " 1", "1 ", ""};
  for (int64_t v = -4000; v <= 4000; v += 7) candidates.push_back(decimal_text(v));
  for (int64_t v = -400; v <= 400; ++v) candidates.push_back(std::to_string(v));
  for (int i = 0; i < 400; ++i) candidates.push_back(decimal_text(int64_t(rng() % 200001) - 100000));
  for (int round = 0; round < 60; ++round) {
    const bool integer = round % 3 == 0;
    NumberBounds b;
    std::optional<int64_t> lo, hi;
    if (rng() % 4) lo = int64_t(rng() % 6001) - 3000;
    if (rng() % 4) hi = int64_t(rng() % 6001) - 3000;
    if (round % 5 == 0 && lo) lo = (*lo / 1000) * 1000;  // integral bounds too
    b.lo_exclusive = rng() % 2;
    b.hi_exclusive = rng() % 2;
    if (lo) b.lo = *Decimal::parse(decimal_text(*lo));
    if (hi) b.hi = *Decimal::parse(decimal_text(*hi));
    const Regex r = json_number_regex(b, integer);
    INFO("round " << round << " integer " << integer << " lo " << (lo ? decimal_text(*lo) : "-") << (b.lo_exclusive ? " excl" : "")
                  << " hi " << (hi ? decimal_text(*hi) : "-") << (b.hi_exclusive ? " excl" : ""));
    std::optional<Dfa> d;
    if (!re_is_nothing(r)) d = Dfa::compile(r, 1 << 16);
    for (const std::string& c : candidates) {
      auto v = scaled(c, integer);
      bool expected = v && (!integer || *v % 1000 == 0);
      if (expected && lo) expected = b.lo_exclusive ? *v > *lo : *v >= *lo;
      if (expected && hi) expected = b.hi_exclusive ? *v < *hi : *v <= *hi;
      if (!d) {
        CHECK_FALSE(expected);
        continue;
      }
      INFO("candidate \"" << c << "\"");
      CHECK(dfa_accepts(*d, c) == expected);
    }
  }
}

TEST_CASE("unbounded numbers: 16 integer digits, 16 fraction digits, no exponent", "[constrain][numbers]") {
  const Dfa ints = Dfa::compile(json_number_regex({}, true), 1 << 16);
  CHECK(dfa_accepts(ints, "9999999999999999"));
  CHECK(dfa_accepts(ints, "-9999999999999999"));
  CHECK_FALSE(dfa_accepts(ints, "10000000000000000"));
  CHECK_FALSE(dfa_accepts(ints, "1.0"));
  const Dfa nums = Dfa::compile(json_number_regex({}, false), 1 << 16);
  CHECK(dfa_accepts(nums, "-0.0000000000000001"));
  CHECK_FALSE(dfa_accepts(nums, "0.00000000000000001"));
  CHECK_FALSE(dfa_accepts(nums, "1e5"));
  // A bound longer than the default widens the limit.
  NumberBounds big;
  big.lo = *Decimal::parse("1e20");
  const Dfa huge = Dfa::compile(json_number_regex(big, true), 1 << 16);
  CHECK(dfa_accepts(huge, "100000000000000000000"));
  CHECK_FALSE(dfa_accepts(huge, "99999999999999999999"));
  NumberBounds tiny;
  tiny.lo = *Decimal::parse("0.1");
  tiny.hi = *Decimal::parse("0.1000000000000000000001");
  const Dfa between = Dfa::compile(json_number_regex(tiny, false), 1 << 16);
  CHECK(dfa_accepts(between, "0.10000000000000000000001"));
  CHECK_FALSE(dfa_accepts(between, "0.1000000000000000000002"));
}
