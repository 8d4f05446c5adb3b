// JSON Schema -> TypeScript-like text. Expected strings are written by hand from the rules
// in docs/harmony.md ("JSON Schema to TypeScript"), which mirror openai-harmony 0.0.8.
#include <catch2/catch.hpp>

#include "libgptoss/harmony/schema_typescript.hpp"

using gptoss::harmony::Json;
using gptoss::harmony::schema_to_typescript;

namespace {
std::string ts(const char* schema) { return schema_to_typescript(Json::parse(schema)); }
}  // namespace

TEST_CASE("schema->ts: scalars, type lists and unknown types", "[harmony]") {
  CHECK(ts(R"({"type":"string"})") == "string");
  CHECK(ts(R"({"type":"integer"})") == "number");
  CHECK(ts(R"({"type":"number"})") == "number");
  CHECK(ts(R"({"type":"boolean"})") == "boolean");
  CHECK(ts(R"({"type":["integer","string"]})") == "number | string");
  CHECK(ts(R"({})") == "any");
  CHECK(ts(R"({"type":"null"})") == "any");
  CHECK(ts(R"(true)") == "any");
}

TEST_CASE("schema->ts: string enums and defaults", "[harmony]") {
  CHECK(ts(R"({"type":"string","enum":["celsius","fahrenheit"]})") == R"("celsius" | "fahrenheit")");
  // An enum's string default is unquoted, a plain string's is quoted, others are JSON.
  CHECK(ts(R"({"type":"object","properties":{
      "unit":{"type":"string","enum":["c","f"],"default":"c"},
      "q":{"type":"string","default":"x y"},
      "k":{"type":"integer","default":5},
      "b":{"type":"boolean","default":false}},"required":["q"]})") ==
        "{\nunit?: \"c\" | \"f\", // default: c\nq: string, // default: \"x y\"\n"
        "k?: number, // default: 5\nb?: boolean, // default: false\n}");
}

TEST_CASE("schema->ts: nullable adds null once", "[harmony]") {
  CHECK(ts(R"({"type":"object","properties":{"n":{"type":"number","nullable":true},
      "s":{"type":["string","null"],"nullable":true}}})") == "{\nn?: number | null,\ns?: string | null,\n}");
}

TEST_CASE("schema->ts: arrays", "[harmony]") {
  CHECK(ts(R"({"type":"array","items":{"type":"integer"}})") == "number[]");
  CHECK(ts(R"({"type":"array"})") == "Array<any>");
  // Items keep the indent of the array itself.
  CHECK(ts(R"({"type":"object","properties":{"xs":{"type":"array","items":{"type":"object",
      "properties":{"a":{"type":"string"}},"required":["a"]}}},"required":["xs"]})") ==
        "{\nxs: {\n    a: string,\n    }[],\n}");
}

TEST_CASE("schema->ts: nested objects keep property order and indent by four", "[harmony]") {
  CHECK(ts(R"({"type":"object","properties":{"z":{"type":"string"},"a":{"type":"object",
      "properties":{"inner":{"type":"boolean","description":"Flag"}}}},"required":["a"]})") ==
        "{\nz?: string,\na: {\n    // Flag\n    inner?: boolean,\n    },\n}");
  // The reference prints an object's own description both above the property and inside.
  CHECK(ts(R"({"type":"object","properties":{"loc":{"type":"object","description":"Where",
      "properties":{"city":{"type":"string"}},"required":["city"]}},"required":["loc"]})") ==
        "{\n// Where\nloc:     // Where\n{\n    city: string,\n    },\n}");
}

TEST_CASE("schema->ts: title and examples become comments", "[harmony]") {
  CHECK(ts(R"({"type":"object","properties":{"q":{"type":"string","title":"Query",
      "description":"What","examples":["a","b"]}},"required":["q"]})") ==
        "{\n// Query\n//\n// What\n// Examples:\n// - \"a\"\n// - \"b\"\nq: string,\n}");
}

TEST_CASE("schema->ts: oneOf on a property", "[harmony]") {
  CHECK(ts(R"({"type":"object","properties":{"id":{"description":"The id","oneOf":[
      {"type":"number","description":"numeric"},
      {"type":"string","description":"textual","default":"a"}]}}})") ==
        "{\n// The id\nid?:\n | number\n | string // textual default: \"a\"\n,\n}");
  // A property description equal to the first variant's is not printed at all (the reference).
  CHECK(ts(R"({"type":"object","properties":{"v":{"description":"same","default":1,"oneOf":[
      {"type":"number","description":"same"},{"type":"boolean","nullable":true}]}},"required":["v"]})") ==
        "{\n// default: 1\nv:\n | number\n | boolean | null\n,\n}");
}

TEST_CASE("schema->ts: oneOf on the schema itself", "[harmony]") {
  // Here an enum's string default is printed as JSON (quoted).
  CHECK(ts(R"({"oneOf":[{"type":"string","enum":["a","b"],"default":"a"},
      {"type":"number","nullable":true,"description":"n"}]})") ==
        "\n | \"a\" | \"b\" // default: \"a\"\n | number | null // n");
}
