// Stop strings against a direct search: whatever the stop strings and however the text is cut
// into pushes, what is emitted is the text before the first stop string to complete (the one
// ending earliest, the first listed on a tie), or all of it when none does.
#include <catch2/catch.hpp>

#include <random>

#include "libgptoss/common/error.hpp"
#include "libgptoss/constrain/stop_strings.hpp"

using namespace gptoss;
using namespace gptoss::constrain;

namespace {

// (emitted text, index of the stop) by searching the whole text.
std::pair<std::string, int> reference(const std::string& text, const std::vector<std::string>& stops) {
  for (size_t end = 1; end <= text.size(); ++end)
    for (size_t k = 0; k < stops.size(); ++k)
      if (stops[k].size() <= end && text.compare(end - stops[k].size(), stops[k].size(), stops[k]) == 0)
        return {text.substr(0, end - stops[k].size()), int(k)};
  return {text, -1};
}

}  // namespace

TEST_CASE("stop strings match across pushes and are never emitted", "[constrain][stop]") {
  std::mt19937 rng(9);
  for (int round = 0; round < 2000; ++round) {
    std::vector<std::string> stops(1 + rng() % 3);
    for (auto& s : stops)
      for (size_t n = 1 + rng() % 4; n-- > 0;) s += char('a' + rng() % 3);
    std::string text;
    for (size_t n = rng() % 30; n-- > 0;) text += char('a' + rng() % 4);
    StopStrings ss(stops);
    std::string emitted;
    int index = -1;
    for (size_t at = 0; at < text.size();) {
      const size_t n = std::min(text.size() - at, size_t(rng() % 5));
      int32_t k = -1;
      emitted += ss.push(std::string_view(text).substr(at, n), &k);
      if (k >= 0 && index < 0) index = k;
      at += n;
    }
    if (index < 0) emitted += ss.flush();
    const auto [want, want_index] = reference(text, stops);
    INFO("text \"" << text << "\" stops " << stops.size() << " first \"" << stops[0] << "\"");
    CHECK(emitted == want);
    CHECK(index == want_index);
  }
}

TEST_CASE("held-back text waits; a stop ends the stream; reset starts again", "[constrain][stop]") {
  StopStrings ss({"</answer>", "\n\nUser:"});
  int32_t k = -2;
  CHECK(ss.push("Hello </ans", &k) == "Hello ");
  CHECK(k == -1);
  CHECK(ss.push("wer-ish", &k) == "</answer-ish");
  CHECK(ss.push("\n\nUs", &k) == "");
  CHECK(ss.push("er: more", &k) == "");
  CHECK(k == 1);
  CHECK(ss.push("later", &k) == "");
  CHECK(k == 1);
  CHECK(ss.flush() == "");
  ss.reset();
  CHECK(ss.push("</", &k) == "");
  CHECK(ss.flush() == "</");
  // UTF-8: a held-back prefix never splits what is emitted inside a character.
  StopStrings u({"\xc3\xa9t\xc3\xa9"});
  CHECK(u.push("caf\xc3\xa9", &k) == "caf");
  CHECK(u.push(" ok", &k) == "\xc3\xa9 ok");
}

TEST_CASE("bad stop strings are refused", "[constrain][stop]") {
  CHECK_THROWS_AS(StopStrings({}), Error);
  CHECK_THROWS_AS(StopStrings({""}), Error);
  CHECK_THROWS_AS(StopStrings({std::string(1025, 'x')}), Error);
  CHECK_THROWS_AS(StopStrings(std::vector<std::string>(65, "x")), Error);
  CHECK_NOTHROW(StopStrings(std::vector<std::string>(64, std::string(1024, 'x'))));
}
