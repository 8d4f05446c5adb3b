#include "libgptoss/constrain/constraint.hpp"

#include "libgptoss/common/error.hpp"
#include "libgptoss/constrain/harmony_constraint.hpp"
#include "libgptoss/constrain/matcher.hpp"

namespace gptoss::constrain {
namespace {

// A plain grammar (a JSON Schema document and its end token).
class GrammarConstraint final : public Constraint {
 public:
  GrammarConstraint(std::shared_ptr<const Grammar> grammar, const ConstraintOptions& options)
      : matcher_(std::move(grammar)), budget_(options.max_tokens) {
    if (budget_.limited()) budget_.check_start(matcher_.cost(), matcher_.grammar().vocab());
  }

  void reset() override {
    matcher_.reset();
    budget_.reset();
  }
  void accept(uint32_t token) override {
    const Vocabulary& v = matcher_.grammar().vocab();
    if (matcher_.finished())
      fail(gptoss_status_invalid_state, "the constraint is finished: the document and its end token are complete");
    if (budget_.limited()) {
      const uint64_t cost = matcher_.cost_after(token);
      if (cost != Grammar::kNoCompletion && !budget_.fits_after_next(cost))
        fail(gptoss_status_invalid_argument,
             "{} is not allowed here: the document could not be completed within max_tokens after it "
             "({} tokens left, {} needed)",
             describe_token(v, token), budget_.after_next(), cost);
    }
    if (!matcher_.accept_token(token))
      fail(gptoss_status_invalid_argument, "{} is not allowed here by the JSON Schema grammar", describe_token(v, token));
    budget_.use();
  }
  void fill_mask(TokenMask& mask) override {
    if (matcher_.finished()) {
      mask.clear();
    } else if (!budget_.limited()) {
      matcher_.fill_mask(mask);
    } else if (budget_.after_next() < 0) {
      mask.clear();
    } else if (matcher_.fill_mask(mask, uint64_t(budget_.after_next())) && !budget_.closed) {
      // Something was held back for the budget: closed if the grammar alone allows more.
      TokenMask& all = scratch_.get(mask.num_tokens());
      matcher_.fill_mask(all);
      budget_.closed = all.count() != mask.count();
    }
  }
  bool allows(uint32_t token) override {
    if (matcher_.finished()) return false;
    if (!budget_.limited()) return matcher_.allows_token(token);
    const uint64_t cost = matcher_.cost_after(token);
    return cost != Grammar::kNoCompletion && budget_.fits_after_next(cost);
  }
  bool finished() const override { return matcher_.finished(); }
  size_t num_tokens() const override { return matcher_.grammar().vocab().num_tokens(); }
  uint64_t min_tokens() const override { return matcher_.finished() ? 0 : matcher_.cost(); }
  bool closed_by_budget() const override { return budget_.closed; }
  std::unique_ptr<Constraint> clone() const override { return std::make_unique<GrammarConstraint>(*this); }

 private:
  Matcher matcher_;
  TokenBudget budget_;
  ScratchMask scratch_;
};

}  // namespace

std::unique_ptr<Constraint> CompiledGrammar::make_constraint(const ConstraintOptions& options) const {
  if (harmony) return std::make_unique<HarmonyConstraint>(harmony, options);
  return std::make_unique<GrammarConstraint>(json, options);
}

void TokenBudget::check_start(uint64_t cost, const Vocabulary& vocab) const {
  if (!limited()) return;
  if (cost >= Grammar::kNoCompletion)
    fail(gptoss_status_invalid_argument,
         "max_tokens cannot be honoured: the grammar has no complete output (no final channel and no tool to call)");
  if (!vocab.has_every_byte())
    fail(gptoss_status_invalid_argument,
         "max_tokens needs a vocabulary with a token for every single byte, and this one lacks some");
  if (uint64_t(max_) < cost)
    fail(gptoss_status_invalid_argument, "max_tokens {} is below the {} tokens the shortest complete output takes",
         max_, cost);
}

std::string describe_token(const Vocabulary& vocab, uint32_t token) {
  if (token >= vocab.num_tokens()) return fmt::format("token {} (outside the vocabulary)", token);
  if (vocab.is_special(token)) return fmt::format("token {} {}", token, vocab.special_name(token));
  std::string shown;
  for (unsigned char c : vocab.text_bytes(token)) {
    if (c == '"' || c == '\\') shown += '\\', shown += char(c);
    else if (c >= 0x20 && c < 0x7f) shown += char(c);
    else shown += fmt::format("\\x{:02x}", c);
  }
  return fmt::format("token {} \"{}\"", token, shown);
}

}  // namespace gptoss::constrain
