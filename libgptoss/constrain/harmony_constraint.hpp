#pragma once
// One assistant turn under a HarmonyGrammar: between messages only <|start|>; in a header the
// header grammar of the moment (which knows the tools, the tool choice and whether the
// reasoning budget is spent); in content the grammar the parsed header selects. The reasoning
// budget counts content tokens of messages without recipient other than the answer (analysis,
// commentary preambles); once it is reached the only token allowed is <|end|>, and every later
// header is the budget-spent one. With a token budget (ConstraintOptions::max_tokens), tokens
// after which the turn could not be finished in what is left are held back (TokenBudget).
#include <optional>
#include <string>

#include "libgptoss/constrain/constraint.hpp"
#include "libgptoss/constrain/matcher.hpp"

namespace gptoss::constrain {

class HarmonyConstraint final : public Constraint {
 public:
  HarmonyConstraint(std::shared_ptr<const HarmonyGrammar> grammar, const ConstraintOptions& options);

  void reset() override;
  void accept(uint32_t token) override;
  void fill_mask(TokenMask& mask) override;
  bool allows(uint32_t token) override;
  bool finished() const override { return phase_ == Phase::finished; }
  size_t num_tokens() const override { return grammar_->vocab().num_tokens(); }
  uint64_t min_tokens() const override { return cost(); }
  bool closed_by_budget() const override { return budget_.closed; }
  std::unique_ptr<Constraint> clone() const override { return std::make_unique<HarmonyConstraint>(*this); }

 private:
  enum class Phase { between_messages, header, content, finished };

  void accept_token_of_grammar(uint32_t token);
  void open_header(bool with_role);
  void open_content();
  bool budget_reached() const;
  // Whether one more reasoning token would spend the reasoning budget.
  bool spent_after_reasoning_token() const;
  [[noreturn]] void reject(uint32_t token) const;
  // The cheapest completion of the turn from here, and after `token` (kNoCompletion if the
  // token is not allowed; the token is not taken).
  uint64_t cost() const;
  uint64_t cost_after(uint32_t token);
  // fill_mask without the token budget.
  void fill_grammar_mask(TokenMask& mask);

  std::shared_ptr<const HarmonyGrammar> grammar_;
  ConstraintOptions options_;
  Phase phase_ = Phase::header;
  std::optional<Matcher> matcher_;
  bool with_role_ = false;
  std::string header_text_;
  std::vector<uint32_t> header_units_;  // the same, as HarmonyGrammar::header_cost reads it
  std::string where_;        // what is being written, for messages
  bool counting_ = false;    // in an analysis message's content
  int64_t reasoning_tokens_ = 0;
  bool budget_spent_ = false;
  TokenBudget budget_;
  ScratchMask scratch_;
};

}  // namespace gptoss::constrain
