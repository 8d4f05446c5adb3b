#include "api/json_reader.hpp"

#include <cmath>

#include "api/api_error.hpp"

namespace gptoss_server {

json parse_body(std::string_view body) {
  const json::parser_callback_t limit_depth = [](int depth, json::parse_event_t, json&) {
    if (depth > kMaxBodyDepth)
      throw invalid_request("We could not parse the JSON body of your request: it nests deeper than " +
                                std::to_string(kMaxBodyDepth) + " levels.",
                            {}, "invalid_json");
    return true;
  };
  json value;
  try {
    value = json::parse(body, limit_depth);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    throw invalid_request(std::string("We could not parse the JSON body of your request: ") +
                              excerpt(e.what(), 256) + ". Send a JSON object with Content-Type: application/json.",
                          {}, "invalid_json");
  }
  if (!value.is_object())
    throw invalid_request("The request body must be a JSON object, got " + json_type_name(value) + ".",
                          {}, "invalid_json");
  return value;
}

std::string json_type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a decimal";
    default: return "an unsupported value";
  }
}

void throw_wrong_type(const std::string& path, const char* expected, const json& got) {
  throw invalid_request("Invalid type for '" + path + "': expected " + expected + ", but got " +
                            json_type_name(got) + " instead.",
                        path, "invalid_type");
}

std::string element_path(const std::string& array_path, size_t index) {
  return array_path + "[" + std::to_string(index) + "]";
}

JsonReader::JsonReader(const json& object, std::string path) : object_(&object), path_(std::move(path)) {}

std::string JsonReader::path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

const json* JsonReader::find(std::string_view key) const {
  auto it = object_->find(key);
  if (it == object_->end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<JsonReader> JsonReader::object(std::string_view key) const {
  const json* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_object()) throw_wrong_type(path(key), "an object", *v);
  return JsonReader(*v, path(key));
}

const json* JsonReader::array(std::string_view key) const {
  const json* v = find(key);
  if (v && !v->is_array()) throw_wrong_type(path(key), "an array", *v);
  return v;
}

std::optional<std::string> JsonReader::string(std::string_view key) const {
  const json* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw_wrong_type(path(key), "a string", *v);
  return v->get<std::string>();
}

std::string JsonReader::required_string(std::string_view key) const {
  auto s = string(key);
  if (!s) throw invalid_request("Missing required parameter: '" + path(key) + "'.", path(key),
                                "missing_required_parameter");
  return *s;
}

std::optional<bool> JsonReader::boolean(std::string_view key) const {
  const json* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw_wrong_type(path(key), "a boolean", *v);
  return v->get<bool>();
}

namespace {
[[noreturn]] void out_of_range(const std::string& path, const std::string& range, const json& got) {
  throw invalid_request("Invalid value for '" + path + "': expected " + range + ", but got " +
                            got.dump() + " instead.",
                        path, "invalid_value");
}

std::string number_text(double x) {
  std::string s = json(x).dump();
  if (s.size() > 2 && s.ends_with(".0")) s.resize(s.size() - 2);
  return s;
}
}  // namespace

std::optional<double> JsonReader::number(std::string_view key, double min, double max) const {
  const json* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw_wrong_type(path(key), "a number", *v);
  const double x = v->get<double>();
  if (!(x >= min && x <= max))
    out_of_range(path(key), "a number between " + number_text(min) + " and " + number_text(max), *v);
  return x;
}

std::optional<int64_t> JsonReader::integer(std::string_view key, int64_t min, int64_t max) const {
  const json* v = find(key);
  if (!v) return std::nullopt;
  const std::string range = "an integer between " + std::to_string(min) + " and " + std::to_string(max);
  if (v->is_number_float()) {
    const double x = v->get<double>();
    if (x != std::floor(x)) throw_wrong_type(path(key), "an integer", *v);
    if (!(x >= double(min) && x <= double(max))) out_of_range(path(key), range, *v);
    return int64_t(x);
  }
  if (v->is_number_unsigned()) {
    const uint64_t x = v->get<uint64_t>();
    if (x > uint64_t(max) || int64_t(x) < min) out_of_range(path(key), range, *v);
    return int64_t(x);
  }
  if (!v->is_number_integer()) throw_wrong_type(path(key), "an integer", *v);
  const int64_t x = v->get<int64_t>();
  if (x < min || x > max) out_of_range(path(key), range, *v);
  return x;
}

std::vector<std::string> JsonReader::string_or_strings(std::string_view key, size_t max_items) const {
  const json* v = find(key);
  if (!v) return {};
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array()) throw_wrong_type(path(key), "a string or an array of strings", *v);
  if (v->size() > max_items)
    throw invalid_request("Invalid value for '" + path(key) + "': at most " +
                              std::to_string(max_items) + " strings are allowed, got " +
                              std::to_string(v->size()) + ".",
                          path(key), "invalid_value");
  std::vector<std::string> out;
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) throw_wrong_type(element_path(path(key), i), "a string", (*v)[i]);
    out.push_back((*v)[i].get<std::string>());
  }
  return out;
}

}  // namespace gptoss_server
