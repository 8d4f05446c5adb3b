// Random schemas, valid or not, supported or not: compiling never crashes, hangs or throws
// anything but a gptoss::Error with a message; what compiles can be walked to its end or a cap
// without a dead end. (The fuzzing work drives the same entry point with libFuzzer.)
#include <catch2/catch.hpp>

#include <chrono>
#include <random>

#include "constrain/constrain_test_support.hpp"
#include "libgptoss/common/error.hpp"
#include "libgptoss/constrain/json_schema.hpp"

using namespace gptoss;
using namespace gptoss::constrain;

namespace {

using Json = harmony::Json;

Json random_schema(std::mt19937& rng, int depth) {
  auto pick = [&](std::initializer_list<const char*> xs) { return std::string(*(xs.begin() + rng() % xs.size())); };
  if (depth <= 0 || rng() % 5 == 0) {
    switch (rng() % 8) {
      case 0: return Json(bool(rng() % 2));
      case 1: return Json{{"type", pick({"string", "integer", "number", "boolean", "null", "object", "array"})}};
      case 2: return Json{{"enum", {1, "a", nullptr, Json::array({1}), 2.5}}};
      case 3: return Json{{"const", pick({"x", "y"})}};
      case 4: return Json{{"$ref", pick({"#", "#/$defs/a", "#/$defs/b", "#/nope", "#/properties/p"})}};
      case 5: return Json{{"type", "integer"}, {"minimum", int(rng() % 200) - 100}, {"maximum", int(rng() % 200) - 100}};
      case 6: return Json{{"type", "number"}, {"exclusiveMinimum", double(rng() % 1000) / 7}, {"maximum", 1e300}};
      default: return Json{{pick({"pattern", "format", "not", "x-extra", "description"}), "v"}};
    }
  }
  Json s = Json::object();
  switch (rng() % 6) {
    case 0: {
      s["type"] = "object";
      Json props = Json::object();
      for (int i = int(rng() % 4); i-- > 0;) props[pick({"p", "q", "r", "a/b", "~"})] = random_schema(rng, depth - 1);
      s["properties"] = props;
      if (rng() % 2) s["required"] = Json::array({pick({"p", "q", "z"})});
      if (rng() % 3 == 0) s["additionalProperties"] = rng() % 2 ? Json(false) : random_schema(rng, depth - 1);
      break;
    }
    case 1:
      s["type"] = "array";
      s["items"] = random_schema(rng, depth - 1);
      if (rng() % 2) s["minItems"] = int(rng() % 4);
      if (rng() % 2) s["maxItems"] = int(rng() % 4);
      break;
    case 2:
    case 3: {
      Json list = Json::array();
      for (int i = 1 + int(rng() % 3); i-- > 0;) list.push_back(random_schema(rng, depth - 1));
      s[pick({"anyOf", "oneOf", "allOf"})] = list;
      break;
    }
    case 4: s["$defs"] = {{"a", random_schema(rng, depth - 1)}, {"b", random_schema(rng, depth - 1)}};
            s["$ref"] = pick({"#/$defs/a", "#/$defs/b"});
            break;
    default: s["type"] = Json::array({"string", "null"});
  }
  return s;
}

}  // namespace

TEST_CASE("random schemas compile or fail with a message; compiled ones have no dead ends", "[constrain][json]") {
  auto vocab = test::real_vocab();
  const uint32_t end = *vocab->special_id("<|end|>");
  std::mt19937 rng(123);
  size_t compiled = 0, refused = 0;
  for (int i = 0; i < 400; ++i) {
    const Json schema = random_schema(rng, 5);
    INFO(schema.dump());
    CompiledGrammar g;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      g.json = compile_json_schema(vocab, schema, "schema_json", {end});
    } catch (const Error& e) {
      CHECK((e.status() == gptoss_status_invalid_argument || e.status() == gptoss_status_unsupported_argument));
      CHECK(std::string(e.what()).rfind("schema_json", 0) == 0);
      ++refused;
      continue;
    }
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
    ++compiled;
    auto c = g.make_constraint({});
    TokenMask mask(vocab->num_tokens());
    for (int step = 0; step < 12 && !c->finished(); ++step) {
      c->fill_mask(mask);
      const auto allowed = test::allowed_tokens(mask);
      REQUIRE(!allowed.empty());
      c->accept(allowed[rng() % allowed.size()]);
    }
  }
  CHECK(compiled > 50);
  CHECK(refused > 50);
}

TEST_CASE("an anyOf too wide to match is refused when the grammar is built", "[constrain][json]") {
  Json branches = Json::array();
  for (int i = 0; i < 5000; ++i)
    branches.push_back({{"type", "object"}, {"properties", {{"k" + std::to_string(i), {{"type", "null"}}}}},
                        {"required", {"k" + std::to_string(i)}}});
  auto vocab = test::real_vocab();
  try {
    compile_json_schema(vocab, Json{{"anyOf", branches}}, "schema_json", {*vocab->special_id("<|end|>")});
    FAIL("compiled");
  } catch (const Error& e) {
    CHECK(e.status() == gptoss_status_unsupported_argument);
    CHECK_THAT(e.what(), Catch::Contains("ambiguous"));
  }
}
