#include "constraints.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace gptoss_cli {
namespace {

gptoss_constraint_options constraint_options(const Options& options) {
  gptoss_constraint_options co;
  gptoss::check(gptoss_constraint_options_init(&co), "gptoss_constraint_options_init");
  if (options.max_reasoning_tokens) co.max_reasoning_tokens = *options.max_reasoning_tokens;
  return co;
}

// Tokens the shortest complete output from the grammar's start takes (at most: one per byte),
// or -1 when the grammar cannot be finished.
int64_t shortest_answer(gptoss_grammar_t grammar, const Options& options) {
  gptoss_constraint_options co = constraint_options(options);
  return gptoss::constraint::create(grammar, &co).min_tokens();
}

// Only structured output gets a budget: a JSON document cut by the token limit is invalid, so
// it is steered to close in time. Free text cut short is merely short, and steering it would
// leave --max-tokens no longer a plain cap on the tokens shown (a budget below the shortest
// complete Harmony turn would even be refused).
bool budgeted(gptoss_grammar_t grammar, const Options& options) {
  return grammar != nullptr && !options.json_schema.empty();
}

std::string max_tokens_flag(const Options& options) {
  return "--max-tokens " + std::to_string(options.max_tokens) + (options.max_tokens_given ? "" : " (the default)");
}

}  // namespace

gptoss::grammar make_grammar(gptoss_tokenizer_t tokenizer, const Options& options) {
  if (!options.constrain) return {};
  gptoss_grammar_t grammar = nullptr;
  gptoss_status status;
  if (!options.harmony) {
    if (options.json_schema.empty()) return {};
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
  gptoss::check(status, "creating the grammar");
  return gptoss::grammar(grammar);
}

void check_token_budget(gptoss_grammar_t grammar, const Options& options) {
  if (!budgeted(grammar, options)) return;
  const int64_t shortest = shortest_answer(grammar, options);
  if (shortest >= 0 && options.max_tokens < static_cast<uint64_t>(shortest))
    throw UsageError(max_tokens_flag(options) + " is below the " + std::to_string(shortest) +
                     " tokens the shortest complete answer takes");
}

bool AnswerConstraint::closed_by_budget() const {
  if (!handle || budget < 0) return false;
  return handle.closed_by_budget();
}

std::string AnswerConstraint::budget_source() const {
  return budget_from_context ? std::to_string(budget) + " tokens left in the context"
                             : "--max-tokens " + std::to_string(budget);
}

AnswerConstraint attach_constraint(gptoss_grammar_t grammar, gptoss_sampler_t sampler,
                                   const Options& options, size_t room) {
  AnswerConstraint answer;
  if (grammar == nullptr) return answer;
  gptoss_constraint_options co = constraint_options(options);
  if (budgeted(grammar, options)) {
    // The generation loop samples at most --max-tokens tokens and stops at a full context;
    // every sampled token, the end token included, goes through the constraint, so its
    // budget is the smaller of the two limits.
    answer.budget_from_context = room < options.max_tokens;
    answer.budget = static_cast<int64_t>(std::min(room, options.max_tokens));
    const int64_t shortest = shortest_answer(grammar, options);
    if (shortest < 0) {
      answer.budget = -1;  // an answer that cannot end cannot be steered to its end
    } else if (answer.budget < shortest) {
      throw UsageError((answer.budget_from_context
                            ? "the context leaves room for " + std::to_string(answer.budget) + " tokens,"
                            : max_tokens_flag(options) + " is") +
                       " below the " + std::to_string(shortest) +
                       " tokens the shortest complete answer takes" +
                       (answer.budget_from_context ? " (raise --context)" : ""));
    }
    co.max_tokens = answer.budget;
  }
  answer.handle = gptoss::constraint::create(grammar, &co);
  gptoss::check(gptoss_sampler_set_constraint(sampler, answer.handle.get()),
                "gptoss_sampler_set_constraint");
  return answer;
}

size_t sampling_room(gptoss_context_t context) {
  size_t held = 0, capacity = 0;
  gptoss::check(gptoss_context_get_num_tokens(context, &held), "gptoss_context_get_num_tokens");
  gptoss::check(gptoss_context_get_max_tokens(context, &capacity), "gptoss_context_get_max_tokens");
  return held < capacity ? capacity - held + 1 : 1;
}

bool finished(gptoss_constraint_t constraint) {
  if (constraint == nullptr) return false;
  int32_t done = 0;
  gptoss::check(gptoss_constraint_is_finished(constraint, &done), "gptoss_constraint_is_finished");
  return done != 0;
}

}  // namespace gptoss_cli
