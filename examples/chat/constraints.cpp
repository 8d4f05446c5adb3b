#include "constraints.hpp"

#include <nlohmann/json.hpp>

namespace gptoss_cli {

Grammar make_grammar(gptoss_tokenizer_t tokenizer, const Options& options) {
  if (!options.constrain) return nullptr;
  gptoss_grammar_t grammar = nullptr;
  gptoss_status status;
  if (!options.harmony) {
    if (options.json_schema.empty()) return nullptr;
    status = gptoss_grammar_create_json_schema(tokenizer, options.json_schema.c_str(), &grammar);
  } else {
    // ordered_json: the grammar generates properties in the order the schema lists them.
    nlohmann::ordered_json spec = nlohmann::ordered_json::object();
    if (!options.json_schema.empty())
      spec["response_format"] = {{"type", "json_schema"},
                                 {"schema", nlohmann::ordered_json::parse(options.json_schema)}};
    status = gptoss_grammar_create_harmony(tokenizer, spec.dump().c_str(), &grammar);
  }
  if (status == gptoss_status_invalid_argument || status == gptoss_status_unsupported_argument)
    throw UsageError("--json-schema " + options.json_schema_path + ": " + gptoss_get_last_error_message());
  check(status, "creating the grammar");
  return Grammar(grammar);
}

Constraint attach_constraint(gptoss_grammar_t grammar, gptoss_sampler_t sampler, const Options& options) {
  if (grammar == nullptr) return nullptr;
  gptoss_constraint_options co;
  check(gptoss_constraint_options_init(&co), "gptoss_constraint_options_init");
  if (options.max_reasoning_tokens) co.max_reasoning_tokens = *options.max_reasoning_tokens;
  gptoss_constraint_t constraint = nullptr;
  check(gptoss_constraint_create(grammar, &co, &constraint), "gptoss_constraint_create");
  Constraint owned(constraint);
  check(gptoss_sampler_set_constraint(sampler, constraint), "gptoss_sampler_set_constraint");
  return owned;
}

bool finished(gptoss_constraint_t constraint) {
  if (constraint == nullptr) return false;
  int32_t done = 0;
  check(gptoss_constraint_is_finished(constraint, &done), "gptoss_constraint_is_finished");
  return done != 0;
}

}  // namespace gptoss_cli
