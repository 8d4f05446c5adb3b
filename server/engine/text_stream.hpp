#pragma once
// Text-side helpers of a token stream: token bytes to whole UTF-8 characters, and stop
// strings.
#include <gptoss.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace gptoss_server {

// Bytes in, complete UTF-8 characters out; an incomplete character at the end waits for more
// bytes; bytes that can never form a character become U+FFFD (one per maximal invalid part).
class Utf8Stream {
 public:
  std::string feed(std::string_view bytes);
  // The end of the stream: pending bytes become U+FFFD.
  std::string flush();

 private:
  std::string pending_;
};

// Stop strings over the answer text, matched across token boundaries by the library
// (gptoss_stop_strings_*): text that may begin one is held back until it is known not to.
class StopMatcher {
 public:
  // 0..64 strings of 1..1024 bytes (the request parser enforces it). Throws gptoss::error.
  explicit StopMatcher(const std::vector<std::string>& stops);
  bool matched() const { return matched_; }
  // Appends `text`; returns the part that can be emitted now. On a match, returns the text
  // before the stop string, drops the rest and matched() becomes true.
  std::string feed(std::string_view text);
  // The held-back tail, at the end of the text.
  std::string flush();

 private:
  gptoss::stop_strings stop_;  // empty: no stop strings
  bool matched_ = false;
};

}  // namespace gptoss_server
