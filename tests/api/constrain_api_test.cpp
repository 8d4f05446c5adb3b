// The constrained-decoding C API: every documented status, and sampling through a constraint on
// the shared conformance model.
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "support/c_api.hpp"

using namespace gptoss::test;

namespace {

struct TokDeleter { void operator()(gptoss_tokenizer* t) const { gptoss_tokenizer_release(t); } };
struct GrammarDeleter { void operator()(gptoss_grammar* g) const { gptoss_grammar_release(g); } };
struct ConstraintDeleter { void operator()(gptoss_constraint* c) const { gptoss_constraint_release(c); } };
using TokPtr = std::unique_ptr<gptoss_tokenizer, TokDeleter>;
using GrammarPtr = std::unique_ptr<gptoss_grammar, GrammarDeleter>;
using ConstraintPtr = std::unique_ptr<gptoss_constraint, ConstraintDeleter>;

TokPtr tokenizer() {
  gptoss_tokenizer_t t = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_tokenizer_create_from_file(tokenizer_json().c_str(), &t));
  return TokPtr(t);
}

GrammarPtr json_grammar(gptoss_tokenizer_t tok, const char* schema) {
  gptoss_grammar_t g = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_grammar_create_json_schema(tok, schema, &g));
  return GrammarPtr(g);
}

ConstraintPtr constraint(gptoss_grammar_t g, int64_t budget = -1) {
  gptoss_constraint_options o;
  GPTOSS_REQUIRE_OK(gptoss_constraint_options_init(&o));
  o.max_reasoning_tokens = budget;
  gptoss_constraint_t c = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_constraint_create(g, &o, &c));
  return ConstraintPtr(c);
}


std::vector<uint32_t> mask_of(gptoss_constraint_t c) {
  std::vector<uint32_t> m(GPTOSS_MASK_WORDS(201088));
  size_t n = 0;
  GPTOSS_REQUIRE_OK(gptoss_constraint_fill_mask(c, m.data(), m.size(), &n));
  REQUIRE(n == m.size());
  return m;
}

bool allowed(const std::vector<uint32_t>& m, uint32_t t) { return (m[t / 32] >> (t % 32)) & 1u; }

}  // namespace

TEST_CASE("constraint API: NULLs, bad JSON, capacity, out-parameters untouched",
          "[api][bad-input][constrain][fixed-device]") {
  auto tok = tokenizer();
  gptoss_grammar_t g = nullptr;
  CHECK(gptoss_grammar_create_json_schema(nullptr, "{}", &g) == gptoss_status_invalid_argument);
  CHECK(gptoss_grammar_create_json_schema(tok.get(), nullptr, &g) == gptoss_status_invalid_argument);
  CHECK(gptoss_grammar_create_json_schema(tok.get(), "{}", nullptr) == gptoss_status_invalid_argument);
  CHECK(gptoss_grammar_create_json_schema(tok.get(), "{\"type\": ", &g) == gptoss_status_invalid_argument);
  CHECK_THAT(last_error(), Catch::Contains("schema_json: malformed JSON"));
  CHECK(gptoss_grammar_create_json_schema(tok.get(), "{\"type\": \"string\", \"pattern\": \"x\"}", &g) ==
        gptoss_status_unsupported_argument);
  CHECK_THAT(last_error(), Catch::Contains("\"pattern\""));
  CHECK(gptoss_grammar_create_harmony(tok.get(), "{\"tool_choice\": 3}", &g) == gptoss_status_invalid_argument);
  CHECK_THAT(last_error(), Catch::Contains("spec_json.tool_choice"));
  CHECK(gptoss_grammar_create_harmony(tok.get(), "[", &g) == gptoss_status_invalid_argument);
  CHECK(g == nullptr);
  CHECK(gptoss_grammar_release(nullptr) == gptoss_status_success);

  auto grammar = json_grammar(tok.get(), "{\"type\": \"boolean\"}");
  gptoss_constraint_t c = nullptr;
  CHECK(gptoss_constraint_create(nullptr, nullptr, &c) == gptoss_status_invalid_argument);
  CHECK(gptoss_constraint_create(grammar.get(), nullptr, nullptr) == gptoss_status_invalid_argument);
  gptoss_constraint_options o;
  gptoss_constraint_options_init(&o);
  CHECK(o.max_reasoning_tokens == -1);
  o.struct_size = 1;
  CHECK(gptoss_constraint_create(grammar.get(), &o, &c) == gptoss_status_invalid_argument);
  CHECK(c == nullptr);
  CHECK((gptoss_constraint_options_init)(nullptr) == gptoss_status_invalid_argument);

  auto con = constraint(grammar.get());
  size_t n = 0;
  CHECK(gptoss_constraint_fill_mask(con.get(), nullptr, 0, &n) == gptoss_status_buffer_too_small);
  CHECK(n == 6284);
  std::vector<uint32_t> small(10, 0xdeadbeef);
  CHECK(gptoss_constraint_fill_mask(con.get(), small.data(), small.size(), &n) == gptoss_status_buffer_too_small);
  CHECK(small[0] == 0xdeadbeef);
  CHECK(gptoss_constraint_fill_mask(con.get(), nullptr, 6284, &n) == gptoss_status_invalid_argument);
  CHECK(gptoss_constraint_fill_mask(con.get(), small.data(), 10, nullptr) == gptoss_status_invalid_argument);
  CHECK(gptoss_constraint_fill_mask(nullptr, small.data(), 10, &n) == gptoss_status_invalid_argument);
  int32_t finished = 7;
  CHECK(gptoss_constraint_is_finished(con.get(), nullptr) == gptoss_status_invalid_argument);
  CHECK(gptoss_constraint_is_finished(nullptr, &finished) == gptoss_status_invalid_argument);
  CHECK(finished == 7);
  CHECK(gptoss_constraint_accept_token(nullptr, 0) == gptoss_status_invalid_argument);
  CHECK(gptoss_constraint_reset(nullptr) == gptoss_status_invalid_argument);
  CHECK(gptoss_sampler_set_constraint(nullptr, con.get()) == gptoss_status_invalid_argument);
}

TEST_CASE("accepting a forbidden token fails and changes nothing; finished is terminal",
          "[api][constrain][fixed-device]") {
  auto tok = tokenizer();
  auto grammar = json_grammar(tok.get(), "{\"type\": \"boolean\"}");
  auto con = constraint(grammar.get());
  const auto before = mask_of(con.get());
  CHECK(gptoss_constraint_accept_token(con.get(), 15) == gptoss_status_invalid_argument);  // "0"
  CHECK_THAT(last_error(), Catch::Contains("token 15"));
  CHECK(gptoss_constraint_accept_token(con.get(), 999999) == gptoss_status_invalid_argument);
  CHECK(mask_of(con.get()) == before);
  uint32_t ids[8];
  size_t n = 0;
  GPTOSS_REQUIRE_OK(gptoss_tokenizer_encode(tok.get(), "true", 4, 0, ids, 8, &n));
  for (size_t i = 0; i < n; ++i) GPTOSS_REQUIRE_OK(gptoss_constraint_accept_token(con.get(), ids[i]));
  uint32_t end = 0;
  GPTOSS_REQUIRE_OK(gptoss_tokenizer_get_special_token_id(tok.get(), gptoss_special_token_end, &end));
  const auto done = mask_of(con.get());
  CHECK(allowed(done, end));
  GPTOSS_REQUIRE_OK(gptoss_constraint_accept_token(con.get(), end));
  int32_t finished = 0;
  GPTOSS_REQUIRE_OK(gptoss_constraint_is_finished(con.get(), &finished));
  CHECK(finished == 1);
  CHECK(gptoss_constraint_accept_token(con.get(), end) == gptoss_status_invalid_state);
  const auto after = mask_of(con.get());
  CHECK(std::all_of(after.begin(), after.end(), [](uint32_t w) { return w == 0; }));
  GPTOSS_REQUIRE_OK(gptoss_constraint_reset(con.get()));
  CHECK(mask_of(con.get()) == before);
}

TEST_CASE("sampling through a constraint on a real model yields a valid document", "[api][constrain]") {
  auto model = load_conformance_model();
  gptoss_tokenizer_t raw_tok = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_model_get_tokenizer(model.get(), &raw_tok));
  TokPtr tok(raw_tok);
  auto grammar = json_grammar(tok.get(), R"({"type": "object", "properties": {"n": {"type": "integer",
      "minimum": 3, "maximum": 9}, "s": {"enum": ["x", "y"]}}, "required": ["n", "s"], "additionalProperties": false})");
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    auto con = constraint(grammar.get());
    gptoss_sampler_options so;
    gptoss_sampler_options_init(&so);
    so.seed = seed;
    so.top_logprobs = 2;
    gptoss_sampler_t raw = nullptr;
    GPTOSS_REQUIRE_OK(gptoss_sampler_create(&so, &raw));
    SamplerPtr sampler(raw);
    GPTOSS_REQUIRE_OK(gptoss_sampler_set_constraint(sampler.get(), con.get()));
    auto ctx = make_context(model.get(), 256);
    size_t n = 0;
    GPTOSS_REQUIRE_OK(gptoss_context_append_chars(ctx.get(), "JSON:", 5, &n));
    std::string text;
    int32_t finished = 0;
    for (int i = 0; i < 64 && !finished; ++i) {
      uint32_t t = 0;
      GPTOSS_REQUIRE_OK(gptoss_context_sample(ctx.get(), sampler.get(), &t));
      gptoss_token_logprob chosen{}, alt[2];
      size_t n_alt = 0;
      GPTOSS_REQUIRE_OK(gptoss_sampler_get_last_logprobs(sampler.get(), &chosen, alt, 2, &n_alt));
      CHECK(chosen.logprob <= 0.0f);
      GPTOSS_REQUIRE_OK(gptoss_constraint_is_finished(con.get(), &finished));
      if (!finished) {
        const void* bytes = nullptr;
        size_t size = 0;
        GPTOSS_REQUIRE_OK(gptoss_tokenizer_decode(tok.get(), t, &bytes, &size));
        text.append(static_cast<const char*>(bytes), size);
        GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(ctx.get(), 1, &t));
      }
    }
    INFO(text);
    REQUIRE(finished == 1);
    const auto doc = nlohmann::json::parse(text);
    CHECK(doc["n"].get<int>() >= 3);
    CHECK(doc["n"].get<int>() <= 9);
    CHECK((doc["s"] == "x" || doc["s"] == "y"));
    uint32_t t = 0;
    CHECK(gptoss_context_sample(ctx.get(), sampler.get(), &t) == gptoss_status_invalid_state);
    // Detached, the sampler samples freely again.
    GPTOSS_REQUIRE_OK(gptoss_sampler_set_constraint(sampler.get(), nullptr));
    GPTOSS_REQUIRE_OK(gptoss_context_sample(ctx.get(), sampler.get(), &t));
  }
}

TEST_CASE("constraint API: the token budget's entry points and their errors",
          "[api][bad-input][constrain][fixed-device]") {
  auto tok = tokenizer();
  auto grammar = json_grammar(tok.get(), R"({"type": "object", "properties": {"qty": {"type": "integer"}},
      "required": ["qty"]})");
  auto con = constraint(grammar.get());
  int64_t min = 0;
  CHECK(gptoss_constraint_min_tokens(nullptr, &min) == gptoss_status_invalid_argument);
  CHECK(gptoss_constraint_min_tokens(con.get(), nullptr) == gptoss_status_invalid_argument);
  GPTOSS_REQUIRE_OK(gptoss_constraint_min_tokens(con.get(), &min));
  CHECK(min == 10);  // {"qty":0} and the end token
  int32_t closed = 7;
  CHECK(gptoss_constraint_closed_by_budget(nullptr, &closed) == gptoss_status_invalid_argument);
  CHECK(gptoss_constraint_closed_by_budget(con.get(), nullptr) == gptoss_status_invalid_argument);
  CHECK(closed == 7);
  GPTOSS_REQUIRE_OK(gptoss_constraint_closed_by_budget(con.get(), &closed));
  CHECK(closed == 0);

  gptoss_constraint_options o;
  gptoss_constraint_options_init(&o);
  CHECK(o.max_tokens == -1);
  o.max_tokens = 9;
  gptoss_constraint_t c = nullptr;
  CHECK(gptoss_constraint_create(grammar.get(), &o, &c) == gptoss_status_invalid_argument);
  CHECK_THAT(last_error(), Catch::Contains("max_tokens 9 is below the 10 tokens"));
  CHECK(c == nullptr);
  // A caller built against the first gptoss_constraint_options (16 bytes) gets no budget.
  o.struct_size = 16;
  GPTOSS_REQUIRE_OK(gptoss_constraint_create(grammar.get(), &o, &c));
  ConstraintPtr old_caller(c);
  // A Harmony spec that can never end its turn (no final channel, no tools) has no minimum.
  gptoss_grammar_t h = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_grammar_create_harmony(tok.get(), R"({"channels": ["analysis", "commentary"]})", &h));
  GrammarPtr endless(h);
  auto e = constraint(endless.get());
  GPTOSS_REQUIRE_OK(gptoss_constraint_min_tokens(e.get(), &min));
  CHECK(min == -1);
  o.struct_size = sizeof(o);
  o.max_tokens = 1000;
  CHECK(gptoss_constraint_create(endless.get(), &o, &c) == gptoss_status_invalid_argument);
  CHECK_THAT(last_error(), Catch::Contains("no complete output"));
}

TEST_CASE("sampling hot on a real model within a budget at its minimum: complete and valid", "[api][constrain]") {
  auto model = load_conformance_model();
  gptoss_tokenizer_t raw_tok = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_model_get_tokenizer(model.get(), &raw_tok));
  TokPtr tok(raw_tok);
  auto grammar = json_grammar(tok.get(), R"({"type": "object", "properties": {"name": {"type": "string"},
      "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["name", "tags"],
      "additionalProperties": false})");
  int64_t min = 0;
  GPTOSS_REQUIRE_OK(gptoss_constraint_min_tokens(constraint(grammar.get()).get(), &min));
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    gptoss_constraint_options o;
    gptoss_constraint_options_init(&o);
    o.max_tokens = min + int64_t(seed) - 1;
    gptoss_constraint_t raw_c = nullptr;
    GPTOSS_REQUIRE_OK(gptoss_constraint_create(grammar.get(), &o, &raw_c));
    ConstraintPtr con(raw_c);
    gptoss_sampler_options so;
    gptoss_sampler_options_init(&so);
    so.seed = seed;
    so.temperature = 1.5f;
    gptoss_sampler_t raw = nullptr;
    GPTOSS_REQUIRE_OK(gptoss_sampler_create(&so, &raw));
    SamplerPtr sampler(raw);
    GPTOSS_REQUIRE_OK(gptoss_sampler_set_constraint(sampler.get(), con.get()));
    auto ctx = make_context(model.get(), 256);
    size_t n = 0;
    GPTOSS_REQUIRE_OK(gptoss_context_append_chars(ctx.get(), "JSON:", 5, &n));
    std::string text;
    int32_t finished = 0;
    int64_t used = 0;
    while (!finished && used <= o.max_tokens) {
      uint32_t t = 0;
      GPTOSS_REQUIRE_OK(gptoss_context_sample(ctx.get(), sampler.get(), &t));
      ++used;
      GPTOSS_REQUIRE_OK(gptoss_constraint_is_finished(con.get(), &finished));
      if (finished) break;
      const void* bytes = nullptr;
      size_t size = 0;
      GPTOSS_REQUIRE_OK(gptoss_tokenizer_decode(tok.get(), t, &bytes, &size));
      text.append(static_cast<const char*>(bytes), size);
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(ctx.get(), 1, &t));
    }
    INFO("seed " << seed << " budget " << o.max_tokens << ": " << text);
    REQUIRE(finished == 1);
    CHECK(used <= o.max_tokens);
    const auto doc = nlohmann::json::parse(text);
    CHECK(doc["name"].is_string());
    CHECK(doc["tags"].is_array());
    // Whether the budget had to steer depends on how many bytes the sampled tokens carry.
    int32_t closed = 7;
    GPTOSS_REQUIRE_OK(gptoss_constraint_closed_by_budget(con.get(), &closed));
    CHECK((closed == 0 || closed == 1));
  }
}

TEST_CASE("handles outlive each other in any order", "[api][constrain][fixed-device]") {
  auto tok = tokenizer();
  gptoss_grammar_t g = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_grammar_create_harmony(tok.get(), nullptr, &g));
  GPTOSS_REQUIRE_OK(gptoss_grammar_retain(g));
  GPTOSS_REQUIRE_OK(gptoss_grammar_release(g));
  gptoss_constraint_t c = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_constraint_create(g, nullptr, &c));
  GPTOSS_REQUIRE_OK(gptoss_grammar_release(g));  // the constraint keeps what it needs
  tok.reset();
  gptoss_sampler_t s = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_sampler_create(nullptr, &s));
  GPTOSS_REQUIRE_OK(gptoss_sampler_set_constraint(s, c));
  GPTOSS_REQUIRE_OK(gptoss_sampler_set_constraint(s, c));  // idempotent
  GPTOSS_REQUIRE_OK(gptoss_constraint_release(c));         // the sampler holds it
  std::vector<uint32_t> m(6284);
  size_t n = 0;
  GPTOSS_REQUIRE_OK(gptoss_constraint_fill_mask(c, m.data(), m.size(), &n));
  GPTOSS_REQUIRE_OK(gptoss_sampler_release(s));
}

TEST_CASE("stop strings through the C API", "[api][constrain][fixed-device]") {
  gptoss_stop_strings_t s = nullptr;
  const char* stops[] = {"STOP", "\n\n"};
  CHECK(gptoss_stop_strings_create(nullptr, 1, &s) == gptoss_status_invalid_argument);
  CHECK(gptoss_stop_strings_create(stops, 0, &s) == gptoss_status_invalid_argument);
  const char* empty[] = {""};
  CHECK(gptoss_stop_strings_create(empty, 1, &s) == gptoss_status_invalid_argument);
  const char* with_null[] = {"a", nullptr};
  CHECK(gptoss_stop_strings_create(with_null, 2, &s) == gptoss_status_invalid_argument);
  std::vector<const char*> many(65, "x");
  CHECK(gptoss_stop_strings_create(many.data(), many.size(), &s) == gptoss_status_invalid_argument);
  CHECK(s == nullptr);
  GPTOSS_REQUIRE_OK(gptoss_stop_strings_create(stops, 2, &s));
  const char* emit = nullptr;
  size_t size = 0;
  int32_t index = 5;
  GPTOSS_REQUIRE_OK(gptoss_stop_strings_push(s, "abc ST", 6, &emit, &size, &index));
  CHECK(std::string(emit, size) == "abc ");
  CHECK(index == -1);
  GPTOSS_REQUIRE_OK(gptoss_stop_strings_push(s, "OP and more", 11, &emit, &size, &index));
  CHECK(size == 0);
  CHECK(index == 0);
  CHECK(gptoss_stop_strings_push(s, nullptr, 3, &emit, &size, &index) == gptoss_status_invalid_argument);
  GPTOSS_REQUIRE_OK(gptoss_stop_strings_reset(s));
  GPTOSS_REQUIRE_OK(gptoss_stop_strings_push(s, "x\n", 2, &emit, &size, &index));
  CHECK(std::string(emit, size) == "x");
  GPTOSS_REQUIRE_OK(gptoss_stop_strings_flush(s, &emit, &size));
  CHECK(std::string(emit, size) == "\n");
  GPTOSS_REQUIRE_OK(gptoss_stop_strings_release(s));
  CHECK(gptoss_stop_strings_release(nullptr) == gptoss_status_success);
}
