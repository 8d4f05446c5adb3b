#pragma once
// Constrained decoding for every mode: the grammar the options ask for (the Harmony structure,
// with --json-schema as the answer's format; or the JSON Schema alone with --raw; none with
// --no-constrain), and a fresh constraint per answer attached to the answer's sampler.
#include "api.hpp"
#include "cli_options.hpp"

namespace gptoss_cli {

using Grammar = std::unique_ptr<gptoss_grammar, HandleReleaser<gptoss_grammar, gptoss_grammar_release>>;
using Constraint =
    std::unique_ptr<gptoss_constraint, HandleReleaser<gptoss_constraint, gptoss_constraint_release>>;

// Null when nothing is to be enforced. A schema the library refuses is a UsageError.
Grammar make_grammar(gptoss_tokenizer_t tokenizer, const Options& options);

// A constraint at the start of `grammar` (null grammar: none), attached to `sampler`.
Constraint attach_constraint(gptoss_grammar_t grammar, gptoss_sampler_t sampler, const Options& options);

bool finished(gptoss_constraint_t constraint);

}  // namespace gptoss_cli
