// Masks against the step-by-step semantics: at grammar states reached by random walks, a token
// is in the mask if and only if the constraint accepts it (Constraint::allows runs the bytes
// through the matcher; the mask comes from cached per-lexeme-state sets, trie walks and the
// continuation checks of tokens that leave a lexeme). Brute force over every token of a small
// hand-made vocabulary full of tokens that span grammar boundaries, and of the real 201,088
// tokens at sampled states.
#include <catch2/catch.hpp>

#include <random>

#include "constrain/constrain_test_support.hpp"
#include "libgptoss/constrain/harmony_grammar.hpp"
#include "libgptoss/constrain/json_schema.hpp"

using namespace gptoss;
using namespace gptoss::constrain;
using test::allowed_tokens;

namespace {

const std::vector<std::string> kSpecials = {"<|start|>", "<|end|>",      "<|message|>", "<|channel|>",
                                            "<|constrain|>", "<|return|>", "<|call|>",  "<|endoftext|>",
                                            "<|reserved_1|>"};

// Every byte, JSON and Harmony punctuation merged the way BPE merges it, pieces of UTF-8
// characters (valid and not), and random strings over the characters grammars care about.
std::shared_ptr<const Vocabulary> small_vocab() {
  static const std::shared_ptr<const Vocabulary> vocab = [] {
    std::vector<std::string> text;
    for (int b = 0; b < 256; ++b) text.push_back(std::string(1, char(b)));
    for (const char* t : {"\"", "\",", "\", \"", "\":", "\": ", "\"}", "\"]", "\"},", "}]", "]}", "},{", "{\"",
                          "[\"", "[{\"", "\\\"", "\\\\", "\\u", "\\u00", "\\ud83d", "00", "12", "123", " 1", "-1",
                          "1.", ".5", "0.", "e5", "E-", "true", "false", "null", " true", "tr", "ue", "ul", "{}",
                          "[]", "name", "\"name\"", "\"name\":", "\"name\": \"", "age", "\"age\":", ",\"", ", \"",
                          " to=", " to=functions", ".get", "_weather", "functions.get_weather", "functions",
                          "commentary", "analysis", "final", "json", " json", " code", "assistant", " <", "é",
                          "中", "\xe4\xb8", "\xad", "\xf0\x9f\x98\x80", "\xf0\x9f", "\xc0\x80", "\xed\xa0\x80",
                          "\xed\x9f\xbf", "\n", "\t", "\"\n", "python", " to=python", "c", "f", "\"c\"", "\"f\"",
                          "}}", "]]", "[[", "{{", "1,", "2]", "3}", "-0", "0.0", "99", "100", "150", "151"})
      text.push_back(t);
    std::mt19937 rng(7);
    const std::vector<std::string> pieces = {"{", "}", "[", "]", "\"", ":", ",", " ", "-", "0", "1", "5", "9",
                                             ".", "e", "E", "+", "a", "b", "t", "r", "u", "f", "s", "n", "l",
                                             "\\", "_", "=", "o", "é", "j", "c", "m", "y"};
    for (int i = 0; i < 1500; ++i) {
      std::string s;
      for (size_t n = 2 + rng() % 5; n-- > 0;) s += pieces[rng() % pieces.size()];
      text.push_back(s);
    }
    std::vector<std::pair<std::string, uint32_t>> specials;
    const uint32_t first = uint32_t(text.size());
    for (size_t i = 0; i < kSpecials.size(); ++i) specials.emplace_back(kSpecials[i], first + uint32_t(i));
    return std::make_shared<const Vocabulary>(std::move(text), specials, first + uint32_t(kSpecials.size()));
  }();
  return vocab;
}

// Walks `walks` random paths of up to `steps` tokens; at every state (or every `every`-th)
// compares the mask with allows() for every token (or for `sample` random ones plus all the
// allowed ones when the vocabulary is large).
void check_walks(const CompiledGrammar& g, const Vocabulary& v, int walks, int steps, uint32_t seed, int every = 1,
                 const ConstraintOptions& options = {}, bool some_finish = true) {
  std::mt19937 rng(seed);
  TokenMask mask(v.num_tokens());
  size_t states = 0, finished = 0;
  for (int w = 0; w < walks; ++w) {
    auto c = g.make_constraint(options);
    for (int s = 0; s < steps && !c->finished(); ++s) {
      c->fill_mask(mask);
      const std::vector<uint32_t> allowed = allowed_tokens(mask);
      INFO("walk " << w << " step " << s);
      REQUIRE(!allowed.empty());  // a state the grammar reached can always go on
      if (s % every == 0) {
        ++states;
        for (uint32_t t = 0; t < v.num_tokens(); ++t)
          if (mask.test(t) != c->allows(t)) FAIL_CHECK("token " << t << " " << describe_token(v, t) << ": mask says "
                                                             << mask.test(t));
      }
      // Prefer tokens that close things so walks get through whole documents.
      std::vector<uint32_t> closing;
      for (uint32_t t : allowed)
        if (v.is_special(t) || v.text_bytes(t).find_first_of("\"]}") != std::string_view::npos) closing.push_back(t);
      const auto& pool = (!closing.empty() && rng() % 3 == 0) ? closing : allowed;
      c->accept(pool[rng() % pool.size()]);
    }
    finished += c->finished();
  }
  CHECK(states > 0);
  if (some_finish) CHECK(finished > 0);  // some walks got through whole documents
}

CompiledGrammar json_grammar(const std::shared_ptr<const Vocabulary>& v, const char* schema) {
  CompiledGrammar g;
  g.json = compile_json_schema(v, harmony::Json::parse(schema), "schema_json", {*v->special_id("<|end|>")});
  return g;
}

CompiledGrammar harmony_grammar(const std::shared_ptr<const Vocabulary>& v, const char* spec) {
  CompiledGrammar g;
  g.harmony = std::make_shared<const HarmonyGrammar>(
      v, HarmonySpec::from_json(harmony::Json::parse(spec), "spec_json"), "spec_json");
  return g;
}

const char* kNestedSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "score": {"type": "number", "minimum": -1.5, "exclusiveMaximum": 2.25},
    "unit": {"enum": ["c", "f", null]},
    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
    "child": {"anyOf": [{"$ref": "#"}, {"type": "null"}]},
    "ok": {"type": "boolean"}
  },
  "required": ["name", "age", "tags"],
  "additionalProperties": false
})";

const char* kToolsSpec = R"({
  "tools": {"functions": {"tools": [
     {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"},
       "unit": {"enum": ["c", "f"]}}, "required": ["city"]}},
     {"name": "noargs"}]},
    "python": {"description": "runs code"}},
  "response_format": {"type": "json_schema", "schema": {"type": "object", "properties":
     {"answer": {"type": "integer", "minimum": 1, "maximum": 123}}, "required": ["answer"]}}
})";

}  // namespace

TEST_CASE("masks equal step-by-step acceptance on a small vocabulary: JSON Schemas", "[constrain][soundness]") {
  auto v = small_vocab();
  for (const char* schema :
       {kNestedSchema, R"({"type": "object"})", R"({"type": "array", "items": {"type": ["number", "string"]}})",
        R"({"type": "object", "additionalProperties": {"type": "integer", "maximum": -3}})",
        R"({"$defs": {"n": {"type": "object", "properties": {"v": {"type": "integer"}, "next": {"$ref": "#/$defs/n"}},
            "required": ["v"]}}, "$ref": "#/$defs/n"})",
        R"({"oneOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "integer", "exclusiveMinimum": 7}]})"}) {
    INFO(schema);
    check_walks(json_grammar(v, schema), *v, 12, 60, 11);
  }
}

TEST_CASE("masks equal step-by-step acceptance on a small vocabulary: Harmony", "[constrain][soundness]") {
  auto v = small_vocab();
  ConstraintOptions budget;
  budget.max_reasoning_tokens = 4;
  check_walks(harmony_grammar(v, kToolsSpec), *v, 12, 80, 12, 1, budget);
  check_walks(harmony_grammar(v, R"({"tools": {"functions": {"tools": [{"name": "get_weather"}]}},
                                     "tool_choice": "required"})"),
              *v, 8, 60, 13, 1, budget);
  check_walks(harmony_grammar(v, R"({"start": "message", "tool_choice": "none"})"), *v, 6, 40, 14, 1, budget, false);
}

TEST_CASE("masks equal step-by-step acceptance on the real vocabulary at sampled states", "[constrain][soundness]") {
  auto v = test::real_vocab();
  check_walks(json_grammar(v, kNestedSchema), *v, 2, 24, 21, 6, {}, false);
  ConstraintOptions budget;
  budget.max_reasoning_tokens = 3;
  check_walks(harmony_grammar(v, kToolsSpec), *v, 2, 24, 22, 6, budget, false);
}

// With a token budget the mask is narrowed by costs (cached sets kept whole or walked, exits
// priced on the trie walk, header tokens priced one by one); allows() prices each token alone
// from the state it would reach. Both must agree, from the budget's edge to well above it.
TEST_CASE("masks equal step-by-step acceptance under a token budget", "[constrain][soundness][budget]") {
  auto v = small_vocab();
  auto with_budget = [](const CompiledGrammar& g, int64_t reasoning, int64_t extra) {
    ConstraintOptions o;
    o.max_reasoning_tokens = reasoning;
    o.max_tokens = int64_t(g.make_constraint(o)->min_tokens()) + extra;
    return o;
  };
  uint32_t seed = 31;
  for (const char* schema : {kNestedSchema, R"({"type": "object"})",
                             R"({"type": "array", "items": {"type": ["number", "string"]}, "minItems": 2})"})
    for (int64_t extra : {0, 2, 9, 40}) {
      INFO(schema << " budget minimum + " << extra);
      const CompiledGrammar g = json_grammar(v, schema);
      check_walks(g, *v, 6, 200, seed++, 1, with_budget(g, -1, extra));
    }
  for (const char* spec : {kToolsSpec, R"({"tools": {"functions": {"tools": [{"name": "get_weather"}]}},
                                           "tool_choice": "required"})"})
    for (int64_t reasoning : {-1, 3})
      for (int64_t extra : {0, 3, 30}) {
        INFO(spec << " reasoning " << reasoning << " budget minimum + " << extra);
        const CompiledGrammar g = harmony_grammar(v, spec);
        check_walks(g, *v, 4, 300, seed++, 1, with_budget(g, reasoning, extra));
      }
}
