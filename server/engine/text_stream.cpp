#include "engine/text_stream.hpp"

#include <gptoss.hpp>

#include <algorithm>
#include <utility>

namespace gptoss_server {
namespace {

const char kReplacement[] = "\xEF\xBF\xBD";

// Bytes a character starting with `lead` needs, and the allowed range of its second byte
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF); 0 = invalid lead.
int sequence_length(unsigned char lead, unsigned char& lo, unsigned char& hi) {
  lo = 0x80;
  hi = 0xBF;
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) {
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
    return 3;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
    return 4;
  }
  return 0;
}

}  // namespace

std::string Utf8Stream::feed(std::string_view bytes) {
  pending_.append(bytes);
  std::string out;
  size_t i = 0;
  while (i < pending_.size()) {
    unsigned char lo, hi;
    const int len = sequence_length(static_cast<unsigned char>(pending_[i]), lo, hi);
    if (len == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    int valid = 1;  // bytes of the character that are valid so far
    while (valid < len && i + valid < pending_.size()) {
      const unsigned char c = static_cast<unsigned char>(pending_[i + valid]);
      const bool ok = valid == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
      if (!ok) break;
      ++valid;
    }
    if (valid == len) {
      out.append(pending_, i, len);
      i += len;
    } else if (i + valid == pending_.size()) {
      break;  // incomplete: wait for the next token's bytes
    } else {
      out += kReplacement;
      i += valid;
    }
  }
  pending_.erase(0, i);
  return out;
}

std::string Utf8Stream::flush() {
  std::string out = pending_.empty() ? "" : kReplacement;
  pending_.clear();
  return out;
}

StopMatcher::StopMatcher(const std::vector<std::string>& stops) {
  if (stops.empty()) return;
  std::vector<const char*> list;
  for (const auto& s : stops) list.push_back(s.c_str());
  stop_ = gptoss::stop_strings::create(list);
}

std::string StopMatcher::feed(std::string_view text) {
  if (matched_) return {};
  if (!stop_) return std::string(text);
  const gptoss::stop_strings::output out = stop_.push(text);
  matched_ = out.stop_index >= 0;
  return std::string(out.text);
}

std::string StopMatcher::flush() {
  if (!stop_ || matched_) return {};
  return std::string(stop_.flush());
}

}  // namespace gptoss_server
