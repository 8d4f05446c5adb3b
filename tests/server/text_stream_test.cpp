// Token bytes to UTF-8 text, and stop strings across token boundaries, against brute-force
// references on random splits.
#include <catch2/catch.hpp>

#include <random>

#include "engine/text_stream.hpp"

using namespace gptoss_server;

namespace {

// Splits `text` at random places and feeds the pieces.
template <typename Feed>
std::string feed_in_pieces(const std::string& text, std::mt19937& rng, Feed feed) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const size_t n = std::min(text.size() - i, size_t(rng() % 5));
    out += feed(std::string_view(text).substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace

TEST_CASE("Utf8Stream emits whole characters whatever the splits", "[server][text]") {
  const std::string text = "plain ascii, é, 漢字, 🙂 and \xF0\x9F\x98\x80.";
  std::mt19937 rng(1);
  for (int round = 0; round < 200; ++round) {
    Utf8Stream s;
    std::string out = feed_in_pieces(text, rng, [&](std::string_view p) {
      const std::string emitted = s.feed(p);
      // Never half a character.
      for (size_t i = 0; i < emitted.size(); ++i) {
        const unsigned char c = emitted[i];
        if (c >= 0xC0) {
          const size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
          REQUIRE(i + len <= emitted.size());
        }
      }
      return emitted;
    });
    out += s.flush();
    CHECK(out == text);
  }
}

TEST_CASE("Utf8Stream replaces invalid bytes, one U+FFFD per maximal invalid part", "[server][text]") {
  const std::string r = "\xEF\xBF\xBD";
  Utf8Stream s;
  CHECK(s.feed("a\xFF" "b") == "a" + r + "b");
  CHECK(s.feed("\xE6\x97") == "");            // incomplete: waits
  CHECK(s.feed("x") == r + "x");              // cut short: one replacement
  CHECK(s.feed("\xC0\xAF") == r + r);         // overlong lead is never valid
  CHECK(s.feed("\xED\xA0\x80") == r + r + r); // a surrogate: lead then two lone continuations
  CHECK(s.feed("\xF0\x9F") == "");
  CHECK(s.flush() == r);                      // end of stream inside a character
  CHECK(s.flush() == "");
}

TEST_CASE("StopMatcher matches across splits and never emits the stop string", "[server][text]") {
  const std::vector<std::string> stops = {"STOP", "\n\nUser:", "éé"};
  const std::vector<std::string> texts = {"hello STOP world", "no stop here S ST STO", "a\n\nUser: b",
                                          "ééé", "STSTOP", "\n\n\nUser:", "plain"};
  std::mt19937 rng(2);
  for (const auto& text : texts)
    for (int round = 0; round < 100; ++round) {
      INFO(text);
      StopMatcher m(stops);
      std::string out = feed_in_pieces(text, rng, [&](std::string_view p) { return m.feed(p); });
      size_t first = std::string::npos;
      for (const auto& s : stops) first = std::min(first, text.find(s));
      if (first == std::string::npos) {
        CHECK_FALSE(m.matched());
        out += m.flush();
        CHECK(out == text);
      } else {
        CHECK(m.matched());
        CHECK(out == text.substr(0, first));
        CHECK(m.feed("more") == "");
      }
    }
}

TEST_CASE("StopMatcher without stops passes text through at once", "[server][text]") {
  StopMatcher m({});
  CHECK(m.feed("S") == "S");
  CHECK(m.flush() == "");
}
