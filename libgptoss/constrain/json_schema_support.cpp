#include "libgptoss/constrain/json_schema_support.hpp"

#include <algorithm>
#include <unordered_set>
#include <vector>

namespace gptoss::constrain {
namespace {

constexpr int kMaxDepth = 16;

const std::set<std::string> kAllTypes = {"null", "boolean", "object", "array", "number", "string"};

bool has(const Json& s, const char* key) { return s.is_object() && s.contains(key); }

std::string type_of(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_object()) return "object";
  if (v.is_array()) return "array";
  if (v.is_number()) return "number";
  return "string";
}

// Follows a schema's own "$ref" (with nothing else that matters beside it).
const Json& deref(const Json& root, const Json& s, int depth) {
  const Json* cur = &s;
  for (int i = 0; i < kMaxDepth && has(*cur, "$ref") && (*cur)["$ref"].is_string(); ++i) {
    auto r = resolve_ref(root, (*cur)["$ref"].get<std::string>());
    if (!r) break;
    cur = r->schema;
  }
  (void)depth;
  return *cur;
}

std::vector<const Json*> branches(const Json& s) {
  std::vector<const Json*> out;
  for (const char* k : {"anyOf", "oneOf"})
    if (has(s, k) && s[k].is_array())
      for (const Json& b : s[k]) out.push_back(&b);
  return out;
}

std::optional<std::vector<Json>> enum_values(const Json& s) {
  if (has(s, "const")) return std::vector<Json>{s["const"]};
  if (has(s, "enum") && s["enum"].is_array()) return std::vector<Json>(s["enum"].begin(), s["enum"].end());
  return std::nullopt;
}

// Types a schema generates from its own type keyword, or from the keywords it uses.
std::set<std::string> own_types(const Json& s) {
  std::set<std::string> out;
  if (has(s, "type")) {
    const Json& t = s["type"];
    auto add = [&](const Json& name) {
      if (!name.is_string()) return;
      std::string n = name.get<std::string>();
      out.insert(n == "integer" ? "number" : n);
    };
    if (t.is_array())
      for (const Json& n : t) add(n);
    else
      add(t);
    return out;
  }
  for (const char* k : {"properties", "required", "additionalProperties"})
    if (has(s, k)) out.insert("object");
  for (const char* k : {"items", "minItems", "maxItems"})
    if (has(s, k)) out.insert("array");
  for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
    if (has(s, k)) out.insert("number");
  return out.empty() ? kAllTypes : out;
}

bool number_in_bounds(const Decimal& d, const NumberBounds& b) {
  if (b.lo) {
    const int c = compare(d, *b.lo);
    if (c < 0 || (c == 0 && b.lo_exclusive)) return false;
  }
  if (b.hi) {
    const int c = compare(d, *b.hi);
    if (c > 0 || (c == 0 && b.hi_exclusive)) return false;
  }
  return true;
}

// Whether `v` cannot be valid under `s` (false when unsure).
bool value_excluded(const Json& root, const Json& v, const Json& schema, int depth) {
  const Json& s = deref(root, schema, depth);
  if (s.is_boolean()) return !s.get<bool>();
  if (!s.is_object()) return false;
  if (auto bs = branches(s); !bs.empty())
    return std::all_of(bs.begin(), bs.end(), [&](const Json* b) { return value_excluded(root, v, *b, depth + 1); });
  if (!admitted_types(root, s, depth + 1).count(type_of(v))) return true;
  if (auto values = enum_values(s)) return std::find(values->begin(), values->end(), v) == values->end();
  if (!value_satisfies_simple_keywords(v, s)) return true;
  return false;
}

std::set<std::string> required_of(const Json& s) {
  std::set<std::string> out;
  if (has(s, "required") && s["required"].is_array())
    for (const Json& k : s["required"])
      if (k.is_string()) out.insert(k.get<std::string>());
  return out;
}

const Json* property(const Json& s, const std::string& key) {
  if (!has(s, "properties") || !s["properties"].is_object() || !s["properties"].contains(key)) return nullptr;
  return &s["properties"][key];
}

bool forbids_key(const Json& s, const std::string& key) {
  return has(s, "additionalProperties") && s["additionalProperties"].is_boolean() &&
         !s["additionalProperties"].get<bool>() && property(s, key) == nullptr;
}

bool ranges_disjoint(const NumberBounds& a, const NumberBounds& b) {
  auto below = [](const NumberBounds& x, const NumberBounds& y) {  // x entirely below y
    if (!x.hi || !y.lo) return false;
    const int c = compare(*x.hi, *y.lo);
    return c < 0 || (c == 0 && (x.hi_exclusive || y.lo_exclusive));
  };
  return below(a, b) || below(b, a);
}

}  // namespace

KeywordKind keyword_kind(std::string_view k) {
  static const std::unordered_set<std::string_view> supported = {
      "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
      "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "anyOf",
      "oneOf", "allOf", "$ref", "$defs", "definitions"};
  static const std::unordered_set<std::string_view> annotations = {
      "title", "description", "default", "examples", "$schema", "$id", "$comment", "deprecated",
      "readOnly", "writeOnly", "$anchor", "$vocabulary", "contentEncoding", "contentMediaType",
      "contentSchema"};
  static const std::unordered_set<std::string_view> unsupported = {
      "pattern", "format", "minLength", "maxLength", "multipleOf", "minProperties", "maxProperties",
      "patternProperties", "propertyNames", "dependentRequired", "dependentSchemas", "dependencies",
      "if", "then", "else", "not", "contains", "minContains", "maxContains", "uniqueItems",
      "prefixItems", "additionalItems", "unevaluatedItems", "unevaluatedProperties", "$dynamicRef",
      "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor"};
  if (supported.count(k)) return KeywordKind::supported;
  if (annotations.count(k)) return KeywordKind::annotation;
  if (unsupported.count(k)) return KeywordKind::unsupported;
  return KeywordKind::unknown;
}

std::string pointer_append(const std::string& pointer, std::string_view key) {
  std::string out = pointer + "/";
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::optional<ResolvedRef> resolve_ref(const Json& root, const std::string& ref) {
  if (ref.empty() || ref[0] != '#') return std::nullopt;
  std::string fragment;
  for (size_t i = 1; i < ref.size(); ++i) {
    if (ref[i] != '%') {
      fragment += ref[i];
      continue;
    }
    auto hex = [](char c) {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    if (i + 2 >= ref.size() || hex(ref[i + 1]) < 0 || hex(ref[i + 2]) < 0) return std::nullopt;
    fragment += char(hex(ref[i + 1]) * 16 + hex(ref[i + 2]));
    i += 2;
  }
  if (fragment.empty()) return ResolvedRef{&root, ""};
  if (fragment[0] != '/') return std::nullopt;
  try {
    const Json::json_pointer pointer(fragment);
    if (!root.contains(pointer)) return std::nullopt;
    return ResolvedRef{&root.at(pointer), fragment};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::set<std::string> admitted_types(const Json& root, const Json& schema, int depth) {
  if (depth > kMaxDepth) return kAllTypes;
  const Json& s = deref(root, schema, depth);
  if (s.is_boolean()) return s.get<bool>() ? kAllTypes : std::set<std::string>{};
  if (!s.is_object()) return kAllTypes;
  if (auto bs = branches(s); !bs.empty()) {
    std::set<std::string> out;
    for (const Json* b : bs) {
      auto t = admitted_types(root, *b, depth + 1);
      out.insert(t.begin(), t.end());
    }
    return out;
  }
  if (has(s, "allOf") && s["allOf"].is_array() && s["allOf"].size() == 1)
    return admitted_types(root, s["allOf"][0], depth + 1);
  if (auto values = enum_values(s)) {
    std::set<std::string> out;
    for (const Json& v : *values) out.insert(type_of(v));
    return out;
  }
  return own_types(s);
}

Decimal decimal_of(const Json& number) {
  auto d = Decimal::parse(number.dump());
  return d ? *d : Decimal{};
}

NumberBounds number_bounds(const Json& s) {
  NumberBounds b;
  if (!s.is_object()) return b;
  if (has(s, "minimum") && s["minimum"].is_number()) b.lo = decimal_of(s["minimum"]);
  if (has(s, "maximum") && s["maximum"].is_number()) b.hi = decimal_of(s["maximum"]);
  // An exclusive bound: draft 4's boolean on the inclusive one, or a number that replaces it
  // when at least as tight.
  auto exclusive = [&](const char* key, std::optional<Decimal>& bound, bool& excl, int tighter) {
    if (!has(s, key)) return;
    const Json& e = s[key];
    if (e.is_boolean()) {
      excl = e.get<bool>() && bound.has_value();
    } else if (e.is_number()) {
      const Decimal d = decimal_of(e);
      if (!bound || compare(d, *bound) * tighter >= 0) {
        bound = d;
        excl = true;
      }
    }
  };
  exclusive("exclusiveMinimum", b.lo, b.lo_exclusive, 1);
  exclusive("exclusiveMaximum", b.hi, b.hi_exclusive, -1);
  return b;
}

bool value_satisfies_simple_keywords(const Json& v, const Json& s) {
  if (!s.is_object()) return true;
  if (has(s, "type")) {
    std::vector<Json> types;
    if (s["type"].is_array()) types.assign(s["type"].begin(), s["type"].end());
    else types.push_back(s["type"]);
    bool ok = false;
    for (const Json& t : types) {
      if (!t.is_string()) continue;
      const std::string n = t.get<std::string>();
      if (n == "integer") ok = ok || (v.is_number() && decimal_of(v).frac_digits.empty());
      else ok = ok || n == type_of(v);
    }
    if (!ok) return false;
  }
  return !v.is_number() || number_in_bounds(decimal_of(v), number_bounds(s));
}

bool provably_disjoint(const Json& root, const Json& schema_a, const Json& schema_b, int depth) {
  if (depth > kMaxDepth) return false;
  const Json& a = deref(root, schema_a, depth);
  const Json& b = deref(root, schema_b, depth);
  if (a.is_boolean() || b.is_boolean())
    return (a.is_boolean() && !a.get<bool>()) || (b.is_boolean() && !b.get<bool>());
  if (!a.is_object() || !b.is_object()) return false;
  // `y = y`: clang 14 (the fuzz build) cannot capture a structured binding by reference.
  for (auto [x, y] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    if (auto bs = branches(*x); !bs.empty())
      return std::all_of(bs.begin(), bs.end(),
                         [&, y = y](const Json* br) { return provably_disjoint(root, *br, *y, depth + 1); });
    if (has(*x, "allOf") && (*x)["allOf"].is_array() && (*x)["allOf"].size() == 1)
      return provably_disjoint(root, (*x)["allOf"][0], *y, depth + 1);
  }
  for (auto [x, y] : {std::pair{&a, &b}, std::pair{&b, &a}})
    if (auto values = enum_values(*x))
      return std::all_of(values->begin(), values->end(),
                         [&, y = y](const Json& v) { return value_excluded(root, v, *y, depth + 1); });
  const auto ta = admitted_types(root, a, depth + 1), tb = admitted_types(root, b, depth + 1);
  std::vector<std::string> common;
  std::set_intersection(ta.begin(), ta.end(), tb.begin(), tb.end(), std::back_inserter(common));
  if (common.empty()) return true;
  if (common.size() != 1) return false;
  if (common[0] == "number") return ranges_disjoint(number_bounds(a), number_bounds(b));
  if (common[0] != "object") return false;
  const auto ra = required_of(a), rb = required_of(b);
  for (const std::string& k : ra) {
    if (forbids_key(b, k)) return true;
    const Json *pa = property(a, k), *pb = property(b, k);
    if (rb.count(k) && pa && pb && provably_disjoint(root, *pa, *pb, depth + 1)) return true;
  }
  for (const std::string& k : rb)
    if (forbids_key(a, k)) return true;
  return false;
}

}  // namespace gptoss::constrain
