#include "libgptoss/harmony/header_parser.hpp"

#include <string_view>
#include <vector>

#include "libgptoss/common/error.hpp"
#include "libgptoss/harmony/utf8.hpp"

namespace gptoss::harmony {
namespace {

constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kConstrain = "<|constrain|>";

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Unicode trim (Rust str::trim).
std::string trim(const std::string& s) {
  size_t begin = 0, end = s.size(), len = 0;
  while (begin < end && is_unicode_space_at(s, begin, &len)) begin += len;
  size_t last_end = begin;  // end of the last non-space character
  for (size_t i = begin; i < end; i += len)
    if (!is_unicode_space_at(s, i, &len)) last_end = i + len;
  return s.substr(begin, last_end - begin);
}

// Cuts the first "<|channel|>NAME" out of `header`; NAME ends at whitespace or '<'.
// Returns nullopt if there is no marker; "" if the marker has no name.
std::optional<std::string> take_channel(std::string& header) {
  size_t at = header.find(kChannel);
  if (at == std::string::npos) return std::nullopt;
  size_t begin = at + kChannel.size(), end = begin, len = 0;
  while (end < header.size() && header[end] != '<' && !is_unicode_space_at(header, end, &len)) end += len;
  std::string channel = header.substr(begin, end - begin);
  header = header.substr(0, at) + header.substr(end);
  return channel;
}

// Trim; a space before every <|constrain|> so "to=x<|constrain|>json" splits; ASCII split.
std::vector<std::string> words_of(std::string header) {
  header = trim(header);
  if (header.find(kConstrain) != std::string::npos) {
    std::string spaced;
    for (size_t i = 0; i < header.size();) {
      if (starts_with(std::string_view(header).substr(i), kConstrain)) {
        spaced += " ";
        spaced += kConstrain;
        i += kConstrain.size();
      } else {
        spaced += header[i++];
      }
    }
    header = trim(spaced);
  }
  std::vector<std::string> words;
  std::string cur;
  for (char c : header) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
      if (!cur.empty()) words.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) words.push_back(std::move(cur));
  return words;
}

std::optional<std::string> join(const std::vector<std::string>& words, size_t from = 0) {
  if (from >= words.size()) return std::nullopt;
  std::string out;
  for (size_t i = from; i < words.size(); ++i) out += (i > from ? " " : "") + words[i];
  return out;
}

std::string strip_to(const std::string& w) { return starts_with(w, "to=") ? w.substr(3) : w; }

}  // namespace

HeaderParse parse_header(const std::string& header_text, std::optional<Role> given_role,
                         bool split_fields) {
  std::string header = header_text;
  HeaderParse out;
  out.header.channel = take_channel(header);
  if (out.header.channel && out.header.channel->empty())
    fail(gptoss_status_invalid_argument, "channel marker present but no channel value found in header");
  std::vector<std::string> words = words_of(header);

  std::optional<std::string> author_word;
  Role role;
  if (given_role) {
    role = *given_role;
  } else {
    if (words.empty()) fail(gptoss_status_invalid_argument, "message header did not contain a role");
    author_word = words[0];
    if (auto r = role_from_name(words[0])) {
      role = *r;
    } else if (words.size() > 1 || starts_with(words[0], "to=")) {
      // An unknown author followed by header fields is a tool speaking (e.g. browser.search).
      words.erase(words.begin());
      role = Role::tool;
    } else {
      fail(gptoss_status_invalid_argument, "unknown role in message header: \"{}\"", words[0]);
    }
  }
  if (!words.empty() && words[0] == role_name(role)) words.erase(words.begin());
  if (role == Role::tool) out.header.name = author_word;
  out.header.role = role;

  if (split_fields && !words.empty()) {
    const size_t n = words.size();
    std::string last = words.back();
    words.pop_back();
    if (starts_with(last, "to=")) {
      out.header.recipient = last.substr(3);
    } else if (n == 1 && !starts_with(last, kConstrain)) {
      out.header.recipient = last;
    } else {
      out.header.content_type = last;
      if (!words.empty()) {
        out.header.recipient = strip_to(words.back());
        words.pop_back();
      }
    }
  }
  out.leftover = join(words);
  return out;
}

HeaderParse parse_header_tolerant(const std::string& header_text, std::optional<Role> given_role,
                                  Role fallback_role) {
  std::string header = header_text;
  HeaderParse out;
  out.header.channel = take_channel(header);
  if (out.header.channel && out.header.channel->empty()) out.header.channel.reset();
  std::vector<std::string> words = words_of(header);
  // "<|constrain|> json" -> "<|constrain|>json"
  for (size_t i = 0; i + 1 < words.size(); ++i)
    if (words[i] == kConstrain) {
      words[i] += words[i + 1];
      words.erase(words.begin() + i + 1);
    }

  Role role = given_role.value_or(fallback_role);
  if (!given_role && !words.empty()) {
    if (auto r = role_from_name(words[0])) {
      role = *r;
    } else {
      role = Role::tool;
      out.header.name = words[0];
      words.erase(words.begin());
    }
  }
  if (!words.empty() && words[0] == role_name(role)) words.erase(words.begin());
  out.header.role = role;

  std::vector<std::string> rest;
  for (auto& w : words) {
    if (!out.header.recipient && starts_with(w, "to=") && w.size() > 3) out.header.recipient = w.substr(3);
    else if (!out.header.content_type && starts_with(w, kConstrain)) out.header.content_type = w;
    else rest.push_back(w);
  }
  out.leftover = join(rest);
  return out;
}

}  // namespace gptoss::harmony
