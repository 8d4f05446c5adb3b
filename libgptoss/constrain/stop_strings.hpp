#pragma once
// Stop strings over streamed text (gptoss_stop_strings_t). Each stop string is matched by its
// own KMP automaton fed byte by byte, so matching is linear in the text and spans pushes; the
// longest partial match is the text held back. The first stop string to complete wins.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gptoss::constrain {

class StopStrings {
 public:
  static constexpr size_t kMaxStops = 64;
  static constexpr size_t kMaxStopBytes = 1024;

  // Throws gptoss::Error(invalid_argument) for none, too many, empty or too long strings.
  explicit StopStrings(std::vector<std::string> stops);

  // Appends text; returns what is now safe to emit (valid until the next call) and sets
  // *stop_index to the stop string that completed, or -1. After a stop nothing is emitted.
  std::string_view push(std::string_view text, int32_t* stop_index);
  // End of stream: the held-back text ("" after a stop).
  std::string_view flush();
  void reset();

 private:
  struct Stop {
    std::string text;
    std::vector<uint32_t> failure;  // KMP: longest proper border of text[0..i]
    uint32_t state = 0;             // bytes of text matched by the stream's end
  };
  std::vector<Stop> stops_;
  std::string held_, out_;
  int32_t matched_ = -1;
};

}  // namespace gptoss::constrain
