#pragma once
// What the JSON Schema compiler needs to know about schemas besides building grammars: which
// keywords it supports, ignores or refuses; local $ref resolution; the JSON types a schema
// admits; whether a value satisfies a schema's simple keywords (to filter enum values); and
// whether two oneOf branches can never both match (which makes oneOf exactly anyOf).
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "libgptoss/constrain/json_numbers.hpp"
#include "libgptoss/harmony/message.hpp"

namespace gptoss::constrain {

using Json = harmony::Json;

enum class KeywordKind {
  supported,    // compiled
  annotation,   // no effect on validity: ignored
  unsupported,  // constrains values in a way the compiler does not: refused
  unknown       // not a JSON Schema keyword: ignored, as validators do
};
KeywordKind keyword_kind(std::string_view keyword);

// "/a~1b" for the key "a/b" appended to `pointer`.
std::string pointer_append(const std::string& pointer, std::string_view key);

// The schema a local "$ref" ("#", "#/$defs/x", percent-encoded or not) points to inside
// `root`, and its JSON pointer; nullopt if `ref` is not a local pointer or points nowhere.
struct ResolvedRef {
  const Json* schema;
  std::string pointer;
};
std::optional<ResolvedRef> resolve_ref(const Json& root, const std::string& ref);

// The JSON types ("null", "boolean", "object", "array", "number", "string"; integers count as
// "number") that a schema (a boolean or an object) may produce, following $ref, anyOf, oneOf,
// allOf and enum/const; every type when unsure.
std::set<std::string> admitted_types(const Json& root, const Json& schema, int depth = 0);

// Exact decimal of a JSON number value.
Decimal decimal_of(const Json& number);
// The bounds of minimum / maximum / exclusiveMinimum / exclusiveMaximum (either form).
NumberBounds number_bounds(const Json& schema);

// Whether `value` satisfies the schema's type and numeric bounds (enum and const values must).
bool value_satisfies_simple_keywords(const Json& value, const Json& schema);

// True only if no JSON value can be valid under both schemas: different types, different
// const/enum values, disjoint number ranges, or a property both require with disjoint values
// (or that one requires and the other forbids). False when unsure.
bool provably_disjoint(const Json& root, const Json& a, const Json& b, int depth = 0);

}  // namespace gptoss::constrain
