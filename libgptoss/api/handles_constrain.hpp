#pragma once
// The constrained-decoding handles: a compiled grammar, a per-sequence constraint (with the
// mask buffer the sampler fills each step) and stop strings.
#include <memory>
#include <string>

#include "libgptoss/api/api_util.hpp"
#include "libgptoss/constrain/constraint.hpp"
#include "libgptoss/constrain/stop_strings.hpp"

struct gptoss_grammar : gptoss::api::RefCounted {
  gptoss::constrain::CompiledGrammar grammar;
};

struct gptoss_constraint : gptoss::api::RefCounted {
  std::unique_ptr<gptoss::constrain::Constraint> constraint;
  gptoss::constrain::TokenMask mask;  // scratch for gptoss_context_sample
};

struct gptoss_stop_strings : gptoss::api::RefCounted {
  explicit gptoss_stop_strings(std::vector<std::string> stops) : stops(std::move(stops)) {}
  gptoss::constrain::StopStrings stops;
};
