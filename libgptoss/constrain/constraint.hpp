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
  int64_t max_tokens = -1;            // tokens the constraint may accept in all; < 0: no limit
};

// What is left of ConstraintOptions::max_tokens. With a limit, a constraint allows only tokens
// after which its cheapest completion (in Grammar::min_cost's measure, which a vocabulary with
// every byte as a token can always spell in as many tokens) still fits in what is left. At the
// start the whole output fits, and some token always keeps it fitting (the first byte or
// special token of the cheapest completion), so the output ends, complete, within the limit.
class TokenBudget {
 public:
  explicit TokenBudget(int64_t max_tokens) : max_(max_tokens) {}
  bool limited() const { return max_ >= 0; }
  // Tokens left once the next one is taken (may be negative).
  int64_t after_next() const { return max_ - used_ - 1; }
  // Whether a token after which the cheapest completion costs `cost` fits.
  bool fits_after_next(uint64_t cost) const { return !limited() || (after_next() >= 0 && cost <= uint64_t(after_next())); }
  void use() { ++used_; }
  void reset() {
    used_ = 0;
    closed = false;
  }
  // Refuses a limit that the grammar's cheapest output (`cost` at its start) does not fit.
  void check_start(uint64_t cost, const Vocabulary& vocab) const;

  bool closed = false;  // the limit has forbidden a token the grammar allowed

 private:
  int64_t max_;
  int64_t used_ = 0;
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
  // The cheapest completion from here (Grammar::min_cost's measure, an upper bound on the
  // tokens it takes); Grammar::kNoCompletion when the grammar cannot be completed.
  virtual uint64_t min_tokens() const = 0;
  // Whether ConstraintOptions::max_tokens has forbidden a token the grammar allowed.
  virtual bool closed_by_budget() const = 0;
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
