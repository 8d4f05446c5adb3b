#include "libgptoss/constrain/stop_strings.hpp"

#include <algorithm>

#include "libgptoss/common/error.hpp"

namespace gptoss::constrain {

StopStrings::StopStrings(std::vector<std::string> stops) {
  if (stops.empty() || stops.size() > kMaxStops)
    fail(gptoss_status_invalid_argument, "stop strings: {} given, expected 1..{}", stops.size(), kMaxStops);
  for (size_t i = 0; i < stops.size(); ++i) {
    const std::string& s = stops[i];
    if (s.empty() || s.size() > kMaxStopBytes)
      fail(gptoss_status_invalid_argument, "stop string {} has {} bytes, expected 1..{}", i, s.size(), kMaxStopBytes);
    Stop stop{s, std::vector<uint32_t>(s.size(), 0), 0};
    for (size_t j = 1, k = 0; j < s.size(); ++j) {
      while (k > 0 && s[j] != s[k]) k = stop.failure[k - 1];
      if (s[j] == s[k]) ++k;
      stop.failure[j] = uint32_t(k);
    }
    stops_.push_back(std::move(stop));
  }
}

std::string_view StopStrings::push(std::string_view text, int32_t* stop_index) {
  out_.clear();
  *stop_index = matched_;
  if (matched_ >= 0) return out_;
  for (char c : text) {
    held_.push_back(c);
    for (size_t k = 0; k < stops_.size(); ++k) {
      Stop& s = stops_[k];
      while (s.state > 0 && s.text[s.state] != c) s.state = s.failure[s.state - 1];
      if (s.text[s.state] == c) ++s.state;
      if (s.state == s.text.size()) {
        out_.assign(held_, 0, held_.size() - s.text.size());
        held_.clear();
        matched_ = int32_t(k);
        *stop_index = matched_;
        return out_;
      }
    }
  }
  uint32_t keep = 0;
  for (const Stop& s : stops_) keep = std::max(keep, s.state);
  out_.assign(held_, 0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out_;
}

std::string_view StopStrings::flush() {
  out_.clear();
  if (matched_ < 0) out_.swap(held_);
  held_.clear();
  for (Stop& s : stops_) s.state = 0;
  return out_;
}

void StopStrings::reset() {
  held_.clear();
  out_.clear();
  matched_ = -1;
  for (Stop& s : stops_) s.state = 0;
}

}  // namespace gptoss::constrain
