#pragma once
// Constrained decoding for every mode: the grammar the options ask for (the Harmony structure,
// with --json-schema as the answer's format; or the JSON Schema alone with --raw; none with
// --no-constrain), and a fresh constraint per answer attached to the answer's sampler. A
// --json-schema answer's constraint is also given the turn's token budget (--max-tokens, or
// what the context leaves), so the JSON is complete and valid when the limit comes, not cut.
#include <string>

#include <gptoss.hpp>

#include "cli_options.hpp"

namespace gptoss_cli {

// Empty when nothing is to be enforced. A schema the library refuses is a UsageError.
gptoss::grammar make_grammar(gptoss_tokenizer_t tokenizer, const Options& options);

// Throws UsageError when --max-tokens is below the tokens the shortest complete answer under
// `grammar` takes (only a budgeted, --json-schema answer is checked). Every mode calls it
// before generating anything.
void check_token_budget(gptoss_grammar_t grammar, const Options& options);

// One answer's constraint and the token budget it was given.
struct AnswerConstraint {
  gptoss::constraint handle;  // empty: nothing enforced
  int64_t budget = -1;        // tokens the constraint may accept, the end token included; -1: no limit
  bool budget_from_context = false;  // the context's room, smaller than --max-tokens, set it

  gptoss_constraint_t get() const { return handle.get(); }
  // True once the budget forbade a token the grammar allowed: the answer was steered to its
  // shortest completion.
  bool closed_by_budget() const;
  // What set the budget, for the notice: "--max-tokens 40" or "40 tokens left in the context".
  std::string budget_source() const;
};

// A constraint at the start of `grammar` (null grammar: none), attached to `sampler`.
// `room`: how many tokens the context can still sample for this answer (sampling_room); a
// budgeted answer's budget is the smaller of it and --max-tokens. Throws UsageError when that
// is below the shortest complete answer.
AnswerConstraint attach_constraint(gptoss_grammar_t grammar, gptoss_sampler_t sampler,
                                   const Options& options, size_t room);

// Tokens the context can still sample: its capacity less the tokens it holds, plus the last
// token (sampled from the last logits, never appended).
size_t sampling_room(gptoss_context_t context);

bool finished(gptoss_constraint_t constraint);

}  // namespace gptoss_cli
