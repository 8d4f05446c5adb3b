// C API: constrained decoding (grammars, constraints, masks, stop strings).
#include <cstring>

#include "libgptoss/api/handles.hpp"
#include "libgptoss/api/struct_versions.hpp"
#include "libgptoss/constrain/harmony_grammar.hpp"
#include "libgptoss/constrain/json_schema.hpp"
#include "libgptoss/harmony/message_json.hpp"

using namespace gptoss;

namespace {

std::shared_ptr<const constrain::Vocabulary> vocabulary_of(gptoss_tokenizer_t tokenizer) {
  api::require(tokenizer, "tokenizer");
  return std::make_shared<const constrain::Vocabulary>(tokenizer->tok);
}

gptoss_constraint_options default_constraint_options() {
  gptoss_constraint_options o{};
  o.struct_size = sizeof(o);
  o.max_reasoning_tokens = -1;
  o.max_tokens = -1;
  return o;
}

constrain::Constraint& constraint_of(gptoss_constraint_t c) {
  api::require(c, "constraint");
  return *c->constraint;
}

// What may follow a standalone JSON document: whichever stop token the host's model uses.
std::vector<uint32_t> json_end_tokens(const constrain::Vocabulary& v) {
  std::vector<uint32_t> ids;
  for (const char* n : {"<|return|>", "<|end|>", "<|call|>", "<|endoftext|>"})
    if (auto id = v.special_id(n)) ids.push_back(*id);
  if (ids.empty()) fail(gptoss_status_invalid_argument, "the tokenizer has none of the end tokens <|return|>, <|end|>, <|call|>, <|endoftext|>");
  return ids;
}

}  // namespace

extern "C" {

GPTOSS_API enum gptoss_status gptoss_grammar_create_json_schema(gptoss_tokenizer_t tokenizer, const char* schema_json,
                                                                gptoss_grammar_t* grammar_out) {
  return api::guard([&] {
    api::require(schema_json, "schema_json");
    api::require(grammar_out, "grammar_out");
    auto vocab = vocabulary_of(tokenizer);
    const harmony::Json schema = harmony::parse_json_text(schema_json, "schema_json");
    auto handle = std::make_unique<gptoss_grammar>();
    handle->grammar.json = constrain::compile_json_schema(vocab, schema, "schema_json", json_end_tokens(*vocab));
    *grammar_out = handle.release();
  });
}

GPTOSS_API enum gptoss_status gptoss_grammar_create_harmony(gptoss_tokenizer_t tokenizer, const char* spec_json,
                                                            gptoss_grammar_t* grammar_out) {
  return api::guard([&] {
    api::require(grammar_out, "grammar_out");
    auto vocab = vocabulary_of(tokenizer);
    const harmony::Json spec_doc =
        spec_json ? harmony::parse_json_text(spec_json, "spec_json") : harmony::Json(nullptr);
    const auto spec = constrain::HarmonySpec::from_json(spec_doc, "spec_json");
    auto handle = std::make_unique<gptoss_grammar>();
    handle->grammar.harmony = std::make_shared<const constrain::HarmonyGrammar>(vocab, spec, "spec_json");
    *grammar_out = handle.release();
  });
}

GPTOSS_API enum gptoss_status gptoss_grammar_retain(gptoss_grammar_t g) { return api::retain(g); }
GPTOSS_API enum gptoss_status gptoss_grammar_release(gptoss_grammar_t g) { return api::release(g); }

GPTOSS_API enum gptoss_status gptoss_constraint_options_init_sized(struct gptoss_constraint_options* options, size_t size) {
  return api::guard([&] { api::init_struct(options, size, default_constraint_options(), "options"); });
}

GPTOSS_API enum gptoss_status(gptoss_constraint_options_init)(struct gptoss_constraint_options* options) {
  return gptoss_constraint_options_init_sized(options, api::kPlainInitSize<gptoss_constraint_options>);
}

GPTOSS_API enum gptoss_status gptoss_constraint_create(gptoss_grammar_t grammar,
                                                       const struct gptoss_constraint_options* options,
                                                       gptoss_constraint_t* constraint_out) {
  return api::guard([&] {
    api::require(grammar, "grammar");
    api::require(constraint_out, "constraint_out");
    const gptoss_constraint_options o = api::read_struct(options, default_constraint_options(), "options");
    constrain::ConstraintOptions co;
    co.max_reasoning_tokens = o.max_reasoning_tokens;
    co.max_tokens = o.max_tokens;
    auto handle = std::make_unique<gptoss_constraint>();
    handle->constraint = grammar->grammar.make_constraint(co);
    handle->mask = constrain::TokenMask(handle->constraint->num_tokens());
    *constraint_out = handle.release();
  });
}

GPTOSS_API enum gptoss_status gptoss_constraint_retain(gptoss_constraint_t c) { return api::retain(c); }
GPTOSS_API enum gptoss_status gptoss_constraint_release(gptoss_constraint_t c) { return api::release(c); }

GPTOSS_API enum gptoss_status gptoss_constraint_reset(gptoss_constraint_t constraint) {
  return api::guard([&] { constraint_of(constraint).reset(); });
}

GPTOSS_API enum gptoss_status gptoss_constraint_accept_token(gptoss_constraint_t constraint, uint32_t token) {
  return api::guard([&] { constraint_of(constraint).accept(token); });
}

GPTOSS_API enum gptoss_status gptoss_constraint_fill_mask(gptoss_constraint_t constraint, uint32_t* mask_out,
                                                          size_t capacity_words, size_t* n_words_out) {
  return api::guard([&] {
    constrain::Constraint& c = constraint_of(constraint);
    api::require(n_words_out, "n_words_out");
    if (capacity_words > 0) api::require(mask_out, "mask_out");
    constrain::TokenMask& mask = constraint->mask;
    *n_words_out = mask.num_words();
    if (capacity_words < mask.num_words())
      fail(gptoss_status_buffer_too_small, "the mask needs {} words, capacity is {}", mask.num_words(), capacity_words);
    c.fill_mask(mask);
    std::memcpy(mask_out, mask.words(), mask.num_words() * sizeof(uint32_t));
  });
}

GPTOSS_API enum gptoss_status gptoss_constraint_is_finished(gptoss_constraint_t constraint, int32_t* finished_out) {
  return api::guard([&] {
    const constrain::Constraint& c = constraint_of(constraint);
    api::require(finished_out, "finished_out");
    *finished_out = c.finished() ? 1 : 0;
  });
}

GPTOSS_API enum gptoss_status gptoss_constraint_min_tokens(gptoss_constraint_t constraint, int64_t* min_tokens_out) {
  return api::guard([&] {
    const constrain::Constraint& c = constraint_of(constraint);
    api::require(min_tokens_out, "min_tokens_out");
    const uint64_t cost = c.min_tokens();
    *min_tokens_out = cost >= constrain::Grammar::kNoCompletion ? -1 : int64_t(cost);
  });
}

GPTOSS_API enum gptoss_status gptoss_constraint_closed_by_budget(gptoss_constraint_t constraint, int32_t* closed_out) {
  return api::guard([&] {
    const constrain::Constraint& c = constraint_of(constraint);
    api::require(closed_out, "closed_out");
    *closed_out = c.closed_by_budget() ? 1 : 0;
  });
}

GPTOSS_API enum gptoss_status gptoss_sampler_set_constraint(gptoss_sampler_t sampler, gptoss_constraint_t constraint) {
  return api::guard([&] {
    api::require(sampler, "sampler");
    if (constraint != nullptr) constraint->refs.fetch_add(1, std::memory_order_relaxed);
    api::release(sampler->constraint);
    sampler->constraint = constraint;
  });
}

GPTOSS_API enum gptoss_status gptoss_stop_strings_create(const char* const* stops, size_t n_stops,
                                                         gptoss_stop_strings_t* stop_strings_out) {
  return api::guard([&] {
    api::require(stop_strings_out, "stop_strings_out");
    if (n_stops > 0) api::require(stops, "stops");
    std::vector<std::string> list;
    for (size_t i = 0; i < n_stops && i <= constrain::StopStrings::kMaxStops; ++i) {
      if (stops[i] == nullptr) fail(gptoss_status_invalid_argument, "stops[{}] must not be NULL", i);
      list.emplace_back(stops[i], strnlen(stops[i], constrain::StopStrings::kMaxStopBytes + 1));
    }
    if (n_stops > list.size()) list.resize(n_stops);  // too many: reported by StopStrings
    *stop_strings_out = new gptoss_stop_strings(std::move(list));
  });
}

GPTOSS_API enum gptoss_status gptoss_stop_strings_release(gptoss_stop_strings_t s) { return api::release(s); }

GPTOSS_API enum gptoss_status gptoss_stop_strings_push(gptoss_stop_strings_t stop_strings, const char* text,
                                                       size_t text_size, const char** emit_out, size_t* emit_size_out,
                                                       int32_t* stop_index_out) {
  return api::guard([&] {
    api::require(stop_strings, "stop_strings");
    if (text_size > 0) api::require(text, "text");
    api::require(emit_out, "emit_out");
    api::require(emit_size_out, "emit_size_out");
    api::require(stop_index_out, "stop_index_out");
    int32_t index = -1;
    std::string_view emit = stop_strings->stops.push(std::string_view(text ? text : "", text_size), &index);
    *emit_out = emit.data();
    *emit_size_out = emit.size();
    *stop_index_out = index;
  });
}

GPTOSS_API enum gptoss_status gptoss_stop_strings_flush(gptoss_stop_strings_t stop_strings, const char** emit_out,
                                                        size_t* emit_size_out) {
  return api::guard([&] {
    api::require(stop_strings, "stop_strings");
    api::require(emit_out, "emit_out");
    api::require(emit_size_out, "emit_size_out");
    std::string_view emit = stop_strings->stops.flush();
    *emit_out = emit.data();
    *emit_size_out = emit.size();
  });
}

GPTOSS_API enum gptoss_status gptoss_stop_strings_reset(gptoss_stop_strings_t stop_strings) {
  return api::guard([&] {
    api::require(stop_strings, "stop_strings");
    stop_strings->stops.reset();
  });
}

}  // extern "C"
