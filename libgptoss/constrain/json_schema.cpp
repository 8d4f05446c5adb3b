#include "libgptoss/constrain/json_schema.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "libgptoss/common/error.hpp"
#include "libgptoss/constrain/json_numbers.hpp"
#include "libgptoss/constrain/json_schema_support.hpp"

namespace gptoss::constrain {
namespace {

constexpr int kMaxNesting = 64;             // nested subschemas below one root or $ref target
constexpr uint64_t kMaxCountedItems = 10000;  // minItems / a finite maxItems
constexpr size_t kMaxEnumBytes = size_t(1) << 20;

const Json kTrueSchema = true;

class Compiler {
 public:
  Compiler(GrammarBuilder& b, const Json& root, std::string context)
      : b_(b), root_(root), context_(std::move(context)) {}

  uint32_t compile() {
    const uint32_t root = rule("", {{value(root_, "", 0)}});
    while (!pending_.empty()) {
      auto [id, pointer, schema] = pending_.back();
      pending_.pop_back();
      b_.add_alternative(id, {value(*schema, pointer, 0)});
    }
    return root;
  }

 private:
  std::string where(const std::string& pointer) const { return context_ + ": at #" + pointer; }

  template <typename... Args>
  [[noreturn]] void error(gptoss_status status, const std::string& pointer, fmt::format_string<Args...> f,
                          Args&&... args) const {
    throw Error(status, where(pointer) + ": " + fmt::format(f, std::forward<Args>(args)...));
  }

  uint32_t rule(const std::string& pointer, std::vector<std::vector<Symbol>> alternatives) {
    return b_.rule_of(where(pointer), std::move(alternatives));
  }
  Symbol rule_symbol(const std::string& pointer, std::vector<std::vector<Symbol>> alternatives) {
    return b_.rule_symbol(rule(pointer, std::move(alternatives)));
  }
  Symbol literal(std::string_view text) { return b_.lexeme(re_literal(text)); }
  Symbol separator() { return b_.lexeme(re_concat({re_byte(','), re_opt(re_byte(' '))})); }
  Symbol colon() { return b_.lexeme(re_concat({re_byte(':'), re_opt(re_byte(' '))})); }
  Symbol string_value() { return b_.shared_lexeme(re_json_string()); }
  Symbol nothing() { return b_.lexeme(re_nothing()); }

  Symbol value(const Json& s, const std::string& pointer, int depth);
  void check_keywords(const Json& s, const std::string& pointer) const;
  void check_only_annotations_beside(const Json& s, const std::string& pointer, const char* keyword) const;
  Symbol reference(const Json& s, const std::string& pointer);
  Symbol combination(const Json& s, const std::string& pointer, int depth, const char* keyword);
  Symbol enumeration(const Json& s, const std::string& pointer);
  Symbol typed(const Json& s, const std::string& pointer, int depth, const std::string& type);
  Symbol object(const Json& s, const std::string& pointer, int depth);
  Symbol map(const Json& value_schema, const std::string& pointer, int depth);
  Symbol array(const Json& s, const std::string& pointer, int depth);
  Symbol any_value();

  GrammarBuilder& b_;
  const Json& root_;
  std::string context_;
  std::map<std::string, uint32_t> refs_;
  struct Pending {
    uint32_t rule;
    std::string pointer;
    const Json* schema;
  };
  std::vector<Pending> pending_;
  std::optional<uint32_t> any_;
};

void Compiler::check_keywords(const Json& s, const std::string& pointer) const {
  for (auto it = s.begin(); it != s.end(); ++it)
    if (keyword_kind(it.key()) == KeywordKind::unsupported)
      error(gptoss_status_unsupported_argument, pointer, "unsupported JSON Schema keyword \"{}\"", it.key());
  auto expect = [&](const char* key, bool ok, const char* what) {
    if (s.contains(key) && !ok) error(gptoss_status_invalid_argument, pointer, "\"{}\" must be {}", key, what);
  };
  auto count_ok = [](const Json& v) {
    return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0) ||
           (v.is_number_float() && v.get<double>() >= 0 && v.get<double>() == double(uint64_t(v.get<double>())));
  };
  auto schema_ok = [](const Json& v) { return v.is_object() || v.is_boolean(); };
  auto schemas_ok = [&](const Json& v) {
    return v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), schema_ok);
  };
  const auto get = [&](const char* key) -> const Json& { return s.contains(key) ? s[key] : kTrueSchema; };
  expect("properties", get("properties").is_object(), "an object of schemas");
  if (s.contains("properties"))
    for (const Json& p : s["properties"])
      if (!schema_ok(p)) error(gptoss_status_invalid_argument, pointer, "\"properties\" must be an object of schemas");
  expect("required", get("required").is_array() && std::all_of(get("required").begin(), get("required").end(),
                                                                [](const Json& k) { return k.is_string(); }),
         "an array of strings");
  expect("additionalProperties", schema_ok(get("additionalProperties")), "a schema or a boolean");
  if (s.contains("items") && s["items"].is_array())
    error(gptoss_status_unsupported_argument, pointer, "\"items\" as an array (tuple validation) is not supported");
  expect("items", schema_ok(get("items")), "a schema or a boolean");
  expect("minItems", count_ok(get("minItems")), "a non-negative integer");
  expect("maxItems", count_ok(get("maxItems")), "a non-negative integer");
  expect("enum", get("enum").is_array(), "an array");
  for (const char* k : {"minimum", "maximum"}) expect(k, get(k).is_number(), "a number");
  for (const char* k : {"exclusiveMinimum", "exclusiveMaximum"})
    expect(k, get(k).is_number() || get(k).is_boolean(), "a number");
  for (const char* k : {"anyOf", "oneOf", "allOf"}) expect(k, schemas_ok(get(k)), "a non-empty array of schemas");
  expect("$ref", get("$ref").is_string(), "a string");
  for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
    if (s.contains(k) && s[k].is_number_float() && !std::isfinite(s[k].get<double>()))
      error(gptoss_status_invalid_argument, pointer, "\"{}\" must be a finite number", k);
  if (s.contains("type")) {
    static const std::set<std::string> names = {"null", "boolean", "object", "array", "number", "integer", "string"};
    const Json& t = s["type"];
    auto ok = [&](const Json& n) { return n.is_string() && names.count(n.get<std::string>()); };
    if (!(ok(t) || (t.is_array() && !t.empty() && std::all_of(t.begin(), t.end(), ok))))
      error(gptoss_status_invalid_argument, pointer,
            "\"type\" must be one of null, boolean, object, array, number, integer, string, or an array of them");
  }
}

void Compiler::check_only_annotations_beside(const Json& s, const std::string& pointer, const char* keyword) const {
  for (auto it = s.begin(); it != s.end(); ++it) {
    const std::string& k = it.key();
    if (k == keyword || k == "$defs" || k == "definitions") continue;
    if (keyword_kind(k) == KeywordKind::supported)
      error(gptoss_status_unsupported_argument, pointer,
            "\"{}\" beside \"{}\" is not supported (move it into each referenced or listed schema)", k, keyword);
  }
}

Symbol Compiler::value(const Json& s, const std::string& pointer, int depth) {
  if (depth > kMaxNesting)
    error(gptoss_status_unsupported_argument, pointer, "schemas nested more than {} levels deep are not supported",
          kMaxNesting);
  if (s.is_boolean()) return s.get<bool>() ? any_value() : nothing();
  if (!s.is_object()) error(gptoss_status_invalid_argument, pointer, "a schema must be an object or a boolean");
  check_keywords(s, pointer);
  if (s.contains("$ref")) return reference(s, pointer);
  for (const char* k : {"anyOf", "oneOf", "allOf"})
    if (s.contains(k)) return combination(s, pointer, depth, k);
  if (s.contains("enum") || s.contains("const")) return enumeration(s, pointer);

  std::set<std::string> types;
  if (s.contains("type")) {
    if (s["type"].is_array())
      for (const Json& t : s["type"]) types.insert(t.get<std::string>());
    else
      types.insert(s["type"].get<std::string>());
  } else {
    types = admitted_types(root_, s);
    if (types.size() == 6) return any_value();  // no type-specific keyword
  }
  if (types.count("number")) types.erase("integer");
  std::vector<std::vector<Symbol>> alternatives;
  for (const std::string& t : types) alternatives.push_back({typed(s, pointer, depth, t)});
  if (alternatives.size() == 1) return alternatives[0][0];
  return rule_symbol(pointer, std::move(alternatives));
}

Symbol Compiler::reference(const Json& s, const std::string& pointer) {
  check_only_annotations_beside(s, pointer, "$ref");
  const std::string ref = s["$ref"].get<std::string>();
  auto target = resolve_ref(root_, ref);
  if (!target) {
    if (ref.empty() || ref[0] != '#')
      error(gptoss_status_unsupported_argument, pointer, "$ref \"{}\": only local references (\"#/...\") are supported",
            ref);
    error(gptoss_status_invalid_argument, pointer, "$ref \"{}\" does not point into the schema", ref);
  }
  auto [it, added] = refs_.emplace(target->pointer, 0);
  if (added) {
    it->second = b_.add_rule(where(target->pointer));
    pending_.push_back({it->second, target->pointer, target->schema});
  }
  return b_.rule_symbol(it->second);
}

Symbol Compiler::combination(const Json& s, const std::string& pointer, int depth, const char* keyword) {
  for (const char* other : {"anyOf", "oneOf", "allOf"})
    if (other != keyword && s.contains(other))
      error(gptoss_status_unsupported_argument, pointer, "\"{}\" together with \"{}\" is not supported", keyword, other);
  check_only_annotations_beside(s, pointer, keyword);
  const Json& list = s[keyword];
  const std::string list_pointer = pointer_append(pointer, keyword);
  if (std::string_view(keyword) == "allOf") {
    if (list.size() != 1)
      error(gptoss_status_unsupported_argument, pointer, "\"allOf\" with more than one schema is not supported");
    return value(list[0], pointer_append(list_pointer, "0"), depth + 1);
  }
  if (std::string_view(keyword) == "oneOf")
    for (size_t i = 0; i < list.size(); ++i)
      for (size_t j = i + 1; j < list.size(); ++j)
        if (!provably_disjoint(root_, list[i], list[j]))
          error(gptoss_status_unsupported_argument, pointer,
                "\"oneOf\" branches {} and {} may both match one value (supported: branches of different types, "
                "const/enum values or number ranges, or with a required property whose values differ); use \"anyOf\"",
                i, j);
  std::vector<std::vector<Symbol>> alternatives;
  std::vector<const Json*> seen;
  for (size_t i = 0; i < list.size(); ++i) {
    if (std::any_of(seen.begin(), seen.end(), [&](const Json* p) { return *p == list[i]; })) continue;
    seen.push_back(&list[i]);
    alternatives.push_back({value(list[i], pointer_append(list_pointer, std::to_string(i)), depth + 1)});
  }
  if (alternatives.size() == 1) return alternatives[0][0];
  return rule_symbol(pointer, std::move(alternatives));
}

Symbol Compiler::enumeration(const Json& s, const std::string& pointer) {
  std::vector<Json> values;
  if (s.contains("enum")) values.assign(s["enum"].begin(), s["enum"].end());
  if (s.contains("const")) {
    if (s.contains("enum") && std::find(values.begin(), values.end(), s["const"]) == values.end()) values.clear();
    else values = {s["const"]};
  }
  for (const char* k : {"properties", "required", "additionalProperties", "items", "minItems", "maxItems"})
    if (s.contains(k))
      error(gptoss_status_unsupported_argument, pointer, "\"{}\" beside \"enum\" or \"const\" is not supported", k);
  std::vector<Regex> literals;
  std::set<std::string> seen;
  size_t bytes = 0;
  for (const Json& v : values) {
    if (!value_satisfies_simple_keywords(v, s)) continue;
    std::string text = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
    bytes += text.size();
    if (bytes > kMaxEnumBytes)
      error(gptoss_status_unsupported_argument, pointer, "\"enum\" values longer than {} bytes in all are not supported",
            kMaxEnumBytes);
    if (seen.insert(text).second) literals.push_back(re_literal(text));
  }
  if (literals.empty())
    error(gptoss_status_invalid_argument, pointer, "no value of \"enum\"/\"const\" satisfies the schema");
  return b_.lexeme(re_alt(std::move(literals)), where(pointer));
}

Symbol Compiler::typed(const Json& s, const std::string& pointer, int depth, const std::string& type) {
  if (type == "null") return literal("null");
  if (type == "boolean") return b_.lexeme(re_alt({re_literal("true"), re_literal("false")}));
  if (type == "string") return string_value();
  if (type == "object") return object(s, pointer, depth);
  if (type == "array") return array(s, pointer, depth);
  Regex number = json_number_regex(number_bounds(s), type == "integer");
  if (re_is_nothing(number))
    error(gptoss_status_invalid_argument, pointer, "no {} satisfies the schema's minimum and maximum", type);
  return b_.lexeme(std::move(number), where(pointer));
}

// Properties in the schema's order; A(i): none written yet, B(i): some written (a separator
// comes first). Optional properties may be skipped, required ones may not.
Symbol Compiler::object(const Json& s, const std::string& pointer, int depth) {
  std::vector<std::pair<std::string, const Json*>> props;
  if (s.contains("properties"))
    for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it) props.emplace_back(it.key(), &*it);
  std::set<std::string> required;
  if (s.contains("required"))
    for (const Json& k : s["required"]) required.insert(k.get<std::string>());
  const Json& extra = s.contains("additionalProperties") ? s["additionalProperties"] : kTrueSchema;
  const bool extras_forbidden = extra.is_boolean() && !extra.get<bool>();
  for (const Json& k : s.contains("required") ? s["required"] : Json::array()) {
    const std::string key = k.get<std::string>();
    if (std::any_of(props.begin(), props.end(), [&](const auto& p) { return p.first == key; })) continue;
    if (extras_forbidden)
      error(gptoss_status_invalid_argument, pointer,
            "required property \"{}\" is not in \"properties\" and \"additionalProperties\" is false", key);
    props.emplace_back(key, &extra);
  }
  if (props.empty()) return extras_forbidden ? literal("{}") : map(extra, pointer_append(pointer, "additionalProperties"), depth + 1);

  const uint32_t close = rule(pointer, {{literal("}")}});
  uint32_t after_a = close, after_b = close;
  for (size_t i = props.size(); i-- > 0;) {
    const auto& [key, schema] = props[i];
    const std::string prop_pointer = pointer_append(pointer_append(pointer, "properties"), key);
    const bool is_required = required.count(key) != 0;
    if (is_required && schema->is_boolean() && !schema->get<bool>())
      error(gptoss_status_invalid_argument, prop_pointer, "a required property whose schema is false");
    const Symbol v = value(*schema, prop_pointer, depth + 1);
    const Symbol k = b_.lexeme(re_concat({re_literal(Json(key).dump()), re_byte(':'), re_opt(re_byte(' '))}));
    std::vector<std::vector<Symbol>> a = {{k, v, b_.rule_symbol(after_b)}};
    std::vector<std::vector<Symbol>> bs = {{separator(), k, v, b_.rule_symbol(after_b)}};
    if (!is_required) {
      a.push_back({b_.rule_symbol(after_a)});
      bs.push_back({b_.rule_symbol(after_b)});
    }
    after_a = rule(prop_pointer, std::move(a));
    after_b = rule(prop_pointer, std::move(bs));
  }
  return rule_symbol(pointer, {{literal("{"), b_.rule_symbol(after_a)}});
}

// An object of any keys (JSON strings, escapes allowed) whose values match `value_schema`.
Symbol Compiler::map(const Json& value_schema, const std::string& pointer, int depth) {
  const Symbol v = value(value_schema, pointer, depth);
  const uint32_t rest = b_.add_rule(where(pointer));
  b_.add_alternative(rest, {literal("}")});
  b_.add_alternative(rest, {separator(), string_value(), colon(), v, b_.rule_symbol(rest)});
  const uint32_t first = rule(pointer, {{literal("}")}, {string_value(), colon(), v, b_.rule_symbol(rest)}});
  return rule_symbol(pointer, {{literal("{"), b_.rule_symbol(first)}});
}

// rest(k): k items written; "]" once k >= minItems, another item while k < maxItems.
Symbol Compiler::array(const Json& s, const std::string& pointer, int depth) {
  const double min_d = s.contains("minItems") ? s["minItems"].get<double>() : 0.0;
  const bool bounded = s.contains("maxItems");
  const double max_d = bounded ? s["maxItems"].get<double>() : 0.0;
  if (bounded && min_d > max_d) error(gptoss_status_invalid_argument, pointer, "\"minItems\" is greater than \"maxItems\"");
  if (min_d > double(kMaxCountedItems) || (bounded && max_d > double(kMaxCountedItems)))
    error(gptoss_status_unsupported_argument, pointer, "\"minItems\"/\"maxItems\" above {} are not supported",
          kMaxCountedItems);
  const uint64_t min = uint64_t(min_d), max = uint64_t(max_d);
  const Json& items = s.contains("items") ? s["items"] : kTrueSchema;
  if (items.is_boolean() && !items.get<bool>()) {
    if (min > 0) error(gptoss_status_invalid_argument, pointer, "\"minItems\" > 0 but \"items\" is false");
    return literal("[]");
  }
  const Symbol item = value(items, pointer_append(pointer, "items"), depth + 1);
  const uint64_t last = bounded ? max : std::max<uint64_t>(min, 1);
  std::vector<uint32_t> rest(last + 1);
  for (uint64_t k = last + 1; k-- > 0;) {
    rest[k] = b_.add_rule(where(pointer));
    if (k >= min) b_.add_alternative(rest[k], {literal("]")});
    const bool loop = !bounded && k == last;
    if (k < last || loop) {
      std::vector<Symbol> more;
      if (k > 0) more.push_back(separator());
      more.push_back(item);
      more.push_back(b_.rule_symbol(loop ? rest[k] : rest[k + 1]));
      b_.add_alternative(rest[k], std::move(more));
    }
  }
  return rule_symbol(pointer, {{literal("["), b_.rule_symbol(rest[0])}});
}

Symbol Compiler::any_value() {
  if (any_) return b_.rule_symbol(*any_);
  const std::string pointer = "(any JSON value)";
  any_ = b_.add_rule(pointer);
  const Symbol v = b_.rule_symbol(*any_);
  const Symbol scalar = b_.lexeme(re_alt({re_literal("true"), re_literal("false"), re_literal("null"),
                                          json_number_regex(NumberBounds{}, false)}));
  const uint32_t members = b_.add_rule(pointer);
  b_.add_alternative(members, {literal("}")});
  b_.add_alternative(members, {separator(), string_value(), colon(), v, b_.rule_symbol(members)});
  const uint32_t elements = b_.add_rule(pointer);
  b_.add_alternative(elements, {literal("]")});
  b_.add_alternative(elements, {separator(), v, b_.rule_symbol(elements)});
  const uint32_t object = rule(pointer, {{literal("{}")}, {literal("{"), string_value(), colon(), v, b_.rule_symbol(members)}});
  const uint32_t array = rule(pointer, {{literal("[]")}, {literal("["), v, b_.rule_symbol(elements)}});
  for (std::vector<Symbol> alt : std::vector<std::vector<Symbol>>{
           {scalar}, {string_value()}, {b_.rule_symbol(object)}, {b_.rule_symbol(array)}})
    b_.add_alternative(*any_, std::move(alt));
  return v;
}

}  // namespace

uint32_t add_json_schema(GrammarBuilder& builder, const harmony::Json& schema, const std::string& context) {
  return Compiler(builder, schema, context).compile();
}

std::shared_ptr<const Grammar> compile_json_schema(std::shared_ptr<const Vocabulary> vocab, const harmony::Json& schema,
                                                   const std::string& context, const std::vector<uint32_t>& end_tokens) {
  GrammarBuilder b(std::move(vocab));
  const uint32_t value = add_json_schema(b, schema, context);
  const uint32_t root = b.add_rule(context);
  for (uint32_t t : end_tokens) b.add_alternative(root, {b.rule_symbol(value), b.special(t)});
  return b.build(root);
}

}  // namespace gptoss::constrain
