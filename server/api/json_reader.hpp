#pragma once
// Typed access to the fields of a request's JSON object. Every accessor names the field by
// its path ("input[2].content[0].text") when the value has the wrong type or is out of range,
// throwing a 400 ApiError. Missing fields and null read as "not given" (nullopt).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gptoss_server {

using nlohmann::json;

// Deeper than any real request (tool schemas nest a few dozen levels), shallow enough for
// every recursion over the value: dumping the echoed fields, the conversation and the tool
// schemas recurses, and 20,000 levels of "[[[...]]]" overflowed the stack.
inline constexpr int kMaxBodyDepth = 128;

// The request body as a JSON object; malformed JSON (a number beyond a double's range, nesting
// deeper than kMaxBodyDepth included) or another type of value -> 400.
json parse_body(std::string_view body);

// "a string", "an array", ... for messages.
std::string json_type_name(const json& value);

class JsonReader {
 public:
  // `object` must outlive the reader; `path` is the object's own path ("" for the body).
  JsonReader(const json& object, std::string path);
  // A reader of the object at `key`; missing -> nullopt; another type -> 400.
  std::optional<JsonReader> object(std::string_view key) const;
  // The value at `key`, or nullptr if missing or null.
  const json* find(std::string_view key) const;
  const json& value() const { return *object_; }

  std::optional<std::string> string(std::string_view key) const;
  std::string required_string(std::string_view key) const;
  std::optional<bool> boolean(std::string_view key) const;
  std::optional<double> number(std::string_view key, double min, double max) const;
  std::optional<int64_t> integer(std::string_view key, int64_t min, int64_t max) const;
  // A string or an array of at most `max_items` strings (OpenAI's `stop`).
  std::vector<std::string> string_or_strings(std::string_view key, size_t max_items) const;
  // The array at `key` (missing -> nullptr); another type -> 400.
  const json* array(std::string_view key) const;

  // Path of a field of this object: "input[2]" + "content" -> "input[2].content".
  std::string path(std::string_view key) const;
  const std::string& path() const { return path_; }

 private:
  const json* object_;
  std::string path_;
};

// Path of an element: "input" + 2 -> "input[2]".
std::string element_path(const std::string& array_path, size_t index);

// 400 "Invalid type for 'PATH': expected TYPE, but got a TYPE instead."
[[noreturn]] void throw_wrong_type(const std::string& path, const char* expected, const json& got);

}  // namespace gptoss_server
