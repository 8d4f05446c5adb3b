#pragma once
// What gptoss_constraint_t is: one sequence's position in a compiled grammar (a JSON Schema
// grammar or a Harmony turn), with the operations the C API and the sampler use.
#include <cstdint>
#include <memory>
#include <string>

#include "libgptoss/constrain/grammar.hpp"
#include "libgptoss/constrain/harmony_grammar.hpp"
#include "libgptoss/constrain/token_mask.hpp"

namespace gptoss::constrain {

struct ConstraintOptions {
  int64_t max_reasoning_tokens = -1;  // < 0: no limit
};

class Constraint {
 public:
  virtual ~Constraint() = default;
  virtual void reset() = 0;
  // Advances by `token`; throws gptoss::Error(invalid_argument) naming it when the grammar does
  // not allow it (the constraint is then unchanged), invalid_state when finished.
  virtual void accept(uint32_t token) = 0;
  // Overwrites `mask` (num_tokens() wide) with the tokens allowed next.
  virtual void fill_mask(TokenMask& mask) = 0;
  // Whether accept(token) would succeed (token by token, not through the mask machinery).
  virtual bool allows(uint32_t token) = 0;
  virtual bool finished() const = 0;
  virtual size_t num_tokens() const = 0;
  // An independent copy at the same position (to try a continuation, say).
  virtual std::unique_ptr<Constraint> clone() const = 0;
};

// A compiled grammar as the C API holds it: either kind.
struct CompiledGrammar {
  std::shared_ptr<const Grammar> json;
  std::shared_ptr<const HarmonyGrammar> harmony;

  std::unique_ptr<Constraint> make_constraint(const ConstraintOptions& options) const;
};

// "token 1234 (\"abc\")" for messages.
std::string describe_token(const Vocabulary& vocab, uint32_t token);

}  // namespace gptoss::constrain
