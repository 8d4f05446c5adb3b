// The JSON Schema compiler: which documents its grammar accepts (byte by byte, then the end
// token), and the errors for schemas it must refuse. Generated documents are validated by an
// independent validator in tests/python/test_constrained.py.
#include <catch2/catch.hpp>

#include "constrain/constrain_test_support.hpp"
#include "libgptoss/common/error.hpp"
#include "libgptoss/constrain/json_schema.hpp"
#include "libgptoss/constrain/matcher.hpp"

using namespace gptoss;
using namespace gptoss::constrain;

namespace {

std::shared_ptr<const Grammar> compile(const std::string& schema) {
  auto v = test::real_vocab();
  return compile_json_schema(v, harmony::Json::parse(schema), "schema_json", {*v->special_id("<|end|>")});
}

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& doc) {
  Matcher m(g);
  return m.accept_bytes(doc) && m.accept_token(*g->vocab().special_id("<|end|>")) && m.finished();
}

// Expects compilation to fail with `status` and a message containing every part.
void refuses(const std::string& schema, gptoss_status status, std::vector<std::string> parts) {
  INFO(schema);
  try {
    compile(schema);
    FAIL("compiled");
  } catch (const Error& e) {
    CHECK(e.status() == status);
    for (const auto& p : parts) CHECK_THAT(e.what(), Catch::Contains(p));
  }
}

}  // namespace

TEST_CASE("objects: required, optional, order, no extra keys, compact spacing", "[constrain][json]") {
  auto g = compile(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
                       "c": {"type": "boolean"}}, "required": ["a", "c"]})");
  CHECK(accepts(g, R"({"a":1,"c":true})"));
  CHECK(accepts(g, R"({"a": 1, "b": "x", "c": false})"));
  CHECK(accepts(g, R"({"a":-7,"b":"","c":true})"));
  CHECK_FALSE(accepts(g, R"({"c":true,"a":1})"));            // schema order
  CHECK_FALSE(accepts(g, R"({"a":1})"));                     // c required
  CHECK_FALSE(accepts(g, R"({"a":1,"c":true,"d":null})"));   // no undeclared keys
  CHECK_FALSE(accepts(g, R"({"a" : 1,"c":true})"));          // one optional space, after ':' only
  CHECK_FALSE(accepts(g, "{\"a\":1,\n\"c\":true}"));
  CHECK_FALSE(accepts(g, R"({"a":1,"c":true} )"));
  CHECK_FALSE(accepts(g, R"({"a":1.5,"c":true})"));
  // An object without properties is any object; with additionalProperties a map.
  auto any = compile(R"({"type": "object"})");
  CHECK(accepts(any, R"({})"));
  CHECK(accepts(any, R"({"x": [1, {"y": null}], "z": "w\n"})"));
  CHECK_FALSE(accepts(any, R"([])"));
  auto map = compile(R"({"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}})");
  CHECK(accepts(map, R"({"k":1,"\u00e9":2})"));
  CHECK_FALSE(accepts(map, R"({"k":-1})"));
  CHECK(accepts(compile(R"({"type": "object", "additionalProperties": false})"), "{}"));
  // A required key missing from properties is generated with the additionalProperties schema.
  auto extra = compile(R"({"type": "object", "properties": {"a": {"type": "null"}}, "required": ["b"],
                           "additionalProperties": {"type": "boolean"}})");
  CHECK(accepts(extra, R"({"a":null,"b":true})"));
  CHECK_FALSE(accepts(extra, R"({"a":null})"));
}

TEST_CASE("strings: escapes, UTF-8 validity, enum and const", "[constrain][json]") {
  auto g = compile(R"({"type": "string"})");
  CHECK(accepts(g, R"("plain")"));
  CHECK(accepts(g, R"("esc \" \\ \/ \b \f \n \r \t \u00e9 \uFFFF")"));
  CHECK(accepts(g, "\"caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80\""));
  CHECK_FALSE(accepts(g, R"("\ud83d\ude00")"));     // surrogate escapes are not generated
  CHECK_FALSE(accepts(g, R"("\x")"));
  CHECK_FALSE(accepts(g, "\"a\nb\""));               // raw control character
  CHECK_FALSE(accepts(g, "\"\xc3\""));               // truncated UTF-8
  CHECK_FALSE(accepts(g, "\"\xed\xa0\x80\""));       // UTF-8 encoded surrogate
  CHECK_FALSE(accepts(g, "\"\xc0\x80\""));           // overlong
  auto e = compile(R"({"type": "string", "enum": ["a", "b c", 3, "\u00e9"]})");
  CHECK(accepts(e, R"("a")"));
  CHECK(accepts(e, "\"\xc3\xa9\""));
  CHECK_FALSE(accepts(e, "3"));  // not a string: filtered out by "type"
  CHECK_FALSE(accepts(e, R"("b")"));
  auto c = compile(R"({"const": {"k": [1, "x"]}})");
  CHECK(accepts(c, R"({"k":[1,"x"]})"));
  CHECK_FALSE(accepts(c, R"({"k":[1]})"));
}

TEST_CASE("numbers, booleans, null, type arrays, anyOf, oneOf, $ref", "[constrain][json]") {
  auto n = compile(R"({"type": ["integer", "null"], "minimum": -5, "maximum": 10})");
  CHECK(accepts(n, "null"));
  CHECK(accepts(n, "-5"));
  CHECK(accepts(n, "10"));
  CHECK_FALSE(accepts(n, "11"));
  CHECK_FALSE(accepts(n, "-6"));
  auto a = compile(R"({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "number"}, "maxItems": 2}]})");
  CHECK(accepts(a, R"("s")"));
  CHECK(accepts(a, "[1.5, -2]"));
  CHECK_FALSE(accepts(a, "[1, 2, 3]"));
  auto o = compile(R"({"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}},
                                  "required": ["kind"]},
                                 {"type": "object", "properties": {"kind": {"const": "b"}}, "required": ["kind"]}]})");
  CHECK(accepts(o, R"({"kind":"a","x":1})"));
  CHECK(accepts(o, R"({"kind":"b"})"));
  auto r = compile(R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                         "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}},
                       "$ref": "#/$defs/node"})");
  CHECK(accepts(r, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4,"kids":[]}]}]})"));
  CHECK_FALSE(accepts(r, R"({"v":1,"kids":[{"kids":[]}]})"));
  auto arr = compile(R"({"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 3})");
  CHECK_FALSE(accepts(arr, "[true]"));
  CHECK(accepts(arr, "[true,false]"));
  CHECK(accepts(arr, "[true, false, true]"));
  CHECK_FALSE(accepts(arr, "[true,false,true,false]"));
  CHECK(accepts(compile("true"), R"({"any": ["thing", 1, null]})"));
  CHECK(accepts(compile(R"({"$ref": "#/definitions/x", "definitions": {"x": {"type": "null"}}})"), "null"));
}

TEST_CASE("schemas outside the subset are refused naming the keyword and its pointer", "[constrain][json]") {
  const auto unsupported = gptoss_status_unsupported_argument;
  refuses(R"({"type": "object", "properties": {"name": {"type": "string", "pattern": "^a"}}})", unsupported,
          {"\"pattern\"", "#/properties/name"});
  for (const char* k : {"format", "minLength", "maxLength", "multipleOf", "uniqueItems", "not", "if",
                        "patternProperties", "prefixItems", "minProperties", "contains"})
    refuses(std::string(R"({"type": "string", ")") + k + R"(": 1})", unsupported, {std::string("\"") + k + "\"", "#"});
  refuses(R"({"type": "array", "items": [{"type": "string"}]})", unsupported, {"tuple"});
  refuses(R"({"$ref": "https://example.com/s.json"})", unsupported, {"only local references"});
  refuses(R"({"anyOf": [{"type": "string"}], "type": "string"})", unsupported, {"\"type\" beside \"anyOf\""});
  refuses(R"({"allOf": [{"type": "string"}, {"minimum": 1}]})", unsupported, {"allOf"});
  refuses(R"({"oneOf": [{"type": "integer"}, {"type": "number"}]})", unsupported, {"oneOf", "branches 0 and 1"});
  refuses(R"({"oneOf": [{"type": "object"}, {"type": "object", "properties": {"a": {"type": "string"}}}]})",
          unsupported, {"use \"anyOf\""});
  refuses(R"({"type": "array", "minItems": 1000000000})", unsupported, {"minItems"});
}

TEST_CASE("invalid and unsatisfiable schemas are refused with the pointer", "[constrain][json]") {
  const auto invalid = gptoss_status_invalid_argument;
  refuses(R"({"type": "strin"})", invalid, {"\"type\" must be"});
  refuses(R"({"properties": []})", invalid, {"\"properties\" must be"});
  refuses(R"({"required": "a"})", invalid, {"\"required\" must be"});
  refuses(R"({"type": "array", "maxItems": -1})", invalid, {"\"maxItems\""});
  refuses(R"([1, 2])", invalid, {"must be an object or a boolean"});
  refuses(R"({"$ref": "#/$defs/missing"})", invalid, {"does not point into the schema"});
  refuses(R"({"type": "integer", "minimum": 5, "maximum": 4})", invalid, {"no integer satisfies"});
  refuses(R"({"type": "integer", "minimum": 0.5, "maximum": 0.9})", invalid, {"no integer satisfies"});
  refuses(R"({"type": "array", "minItems": 3, "maxItems": 2})", invalid, {"minItems"});
  refuses(R"({"enum": []})", invalid, {"enum"});
  refuses(R"({"type": "string", "enum": [1, 2]})", invalid, {"no value of \"enum\""});
  refuses(R"({"type": "object", "properties": {"a": false}, "required": ["a"]})", invalid, {"#/properties/a"});
  refuses(R"({"type": "object", "required": ["z"], "additionalProperties": false})", invalid, {"\"z\""});
  // Recursion without a base case: a node must contain a node.
  refuses(R"({"$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}, "required": ["next"]}},
             "$ref": "#/$defs/n"})",
          invalid, {"recursion without a base case"});
  // A reference cycle that consumes nothing.
  refuses(R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}},
             "$ref": "#/$defs/a"})",
          invalid, {"consumes no input"});
}

TEST_CASE("hostile schemas fail fast within the size bounds", "[constrain][json]") {
  // Deep nesting.
  std::string deep = R"({"type": "string"})";
  for (int i = 0; i < 100; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  refuses(deep, gptoss_status_unsupported_argument, {"nested more than 64"});
  // A huge enum.
  std::string big = R"({"enum": [)";
  for (int i = 0; i < 30000; ++i) big += (i ? ",\"" : "\"") + std::string(40, char('a' + i % 26)) + std::to_string(i) + "\"";
  refuses(big + "]}", gptoss_status_unsupported_argument, {"enum"});
  // An enum under the byte limit whose automaton is too large.
  std::string wide = R"({"type": "object", "properties": {"e": {"enum": [)";
  for (int i = 0; i < 15000; ++i) wide += (i ? ",\"" : "\"") + std::to_string(i * 7919) + std::string(40, 'x') + "\"";
  refuses(wide + "]}}}", gptoss_status_unsupported_argument, {"#/properties/e", "automaton states"});
  // Many references to many definitions compile each definition once.
  std::string defs = R"({"$defs": {)";
  for (int i = 0; i < 300; ++i)
    defs += (i ? "," : "") + std::string("\"d") + std::to_string(i) + "\": {\"type\": \"array\", \"items\": {\"$ref\": \"#/$defs/d" +
            std::to_string((i + 1) % 300) + "\"}}";
  defs += R"(}, "$ref": "#/$defs/d0"})";
  auto g = compile(defs);
  CHECK(accepts(g, "[[[]]]"));
}
