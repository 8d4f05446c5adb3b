// UTF-8 checks behave like Rust's Utf8Error / from_utf8_lossy (maximal invalid subparts).
#include <catch2/catch.hpp>

#include "libgptoss/harmony/utf8.hpp"

using namespace gptoss::harmony;

TEST_CASE("utf8: valid prefix, invalid subpart length, truncation", "[harmony]") {
  auto c = check_utf8("ab\xC3\xA9");
  CHECK(c.valid_up_to == 4);
  CHECK_FALSE(c.error_len);
  c = check_utf8("a\xC3");  // may still complete
  CHECK(c.valid_up_to == 1);
  CHECK_FALSE(c.error_len);
  c = check_utf8("\xF0\x9F");
  CHECK(c.valid_up_to == 0);
  CHECK_FALSE(c.error_len);
  c = check_utf8("\xE0\x80\x80");  // overlong: E0 needs A0..BF next
  CHECK(c.error_len == std::optional<size_t>(1));
  c = check_utf8("\xED\xA0\x80");  // surrogate
  CHECK(c.error_len == std::optional<size_t>(1));
  c = check_utf8("x\xF0\x9F\x20");  // broken after two bytes
  CHECK(c.valid_up_to == 1);
  CHECK(c.error_len == std::optional<size_t>(2));
  c = check_utf8("\xFF");
  CHECK(c.error_len == std::optional<size_t>(1));
}

TEST_CASE("utf8: lossy decoding replaces each maximal subpart once", "[harmony]") {
  const std::string r(kReplacementChar);
  CHECK(utf8_lossy("Chicken \xF0\x9F") == "Chicken " + r);
  CHECK(utf8_lossy("\xF0\x9F\x98") == r);
  CHECK(utf8_lossy("\xC0\xAF") == r + r);
  CHECK(utf8_lossy("a\xF0\x9F\x20z") == "a" + r + " z");
  CHECK(utf8_lossy("ok") == "ok");
}
