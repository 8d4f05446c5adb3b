#include "libgptoss/constrain/harmony_constraint.hpp"

#include "libgptoss/common/error.hpp"

namespace gptoss::constrain {

HarmonyConstraint::HarmonyConstraint(std::shared_ptr<const HarmonyGrammar> grammar, const ConstraintOptions& options)
    : grammar_(std::move(grammar)), options_(options), budget_(options.max_tokens) {
  reset();
  if (budget_.limited()) budget_.check_start(cost(), grammar_->vocab());  // cost() scans the header forms
}

void HarmonyConstraint::reset() {
  budget_.reset();
  reasoning_tokens_ = 0;
  budget_spent_ = options_.max_reasoning_tokens == 0;
  counting_ = false;
  if (grammar_->start_in_header()) {
    open_header(false);
  } else {
    phase_ = Phase::between_messages;
    matcher_.reset();
  }
}

bool HarmonyConstraint::budget_reached() const {
  return options_.max_reasoning_tokens >= 0 && reasoning_tokens_ >= options_.max_reasoning_tokens;
}

bool HarmonyConstraint::spent_after_reasoning_token() const {
  return budget_spent_ || (options_.max_reasoning_tokens >= 0 && reasoning_tokens_ + 1 >= options_.max_reasoning_tokens);
}

uint64_t HarmonyConstraint::cost() const {
  switch (phase_) {
    case Phase::finished: return 0;
    case Phase::between_messages: return grammar_->between_cost(budget_spent_);
    case Phase::header: return grammar_->header_cost(with_role_, budget_spent_, header_units_);
    case Phase::content:
      // A reasoning message goes on after its <|end|> (which the matcher's cost includes).
      return counting_ ? Grammar::add_costs(matcher_->cost(), grammar_->between_cost(budget_spent_)) : matcher_->cost();
  }
  return Grammar::kNoCompletion;
}

uint64_t HarmonyConstraint::cost_after(uint32_t token) {
  const Vocabulary& v = grammar_->vocab();
  switch (phase_) {
    case Phase::finished: return Grammar::kNoCompletion;
    case Phase::between_messages:
      return token == grammar_->start_id() ? grammar_->between_cost(budget_spent_) - 1 : Grammar::kNoCompletion;
    case Phase::header: {
      if (!matcher_->allows_token(token)) return Grammar::kNoCompletion;
      std::vector<uint32_t> units = header_units_;
      if (v.is_special(token)) units.push_back(HarmonyGrammar::kSpecialUnit + token);
      else for (unsigned char c : v.text_bytes(token)) units.push_back(c);
      return grammar_->header_cost(with_role_, budget_spent_, units);
    }
    case Phase::content:
      if (token == grammar_->end_id())  // a message that is not the answer ends: on from between messages
        return matcher_->allows_token(token) ? grammar_->between_cost(budget_spent_) : Grammar::kNoCompletion;
      if (counting_) {
        if (budget_reached()) return Grammar::kNoCompletion;
        return Grammar::add_costs(matcher_->cost_after(token), grammar_->between_cost(spent_after_reasoning_token()));
      }
      return matcher_->cost_after(token);
  }
  return Grammar::kNoCompletion;
}

void HarmonyConstraint::open_header(bool with_role) {
  phase_ = Phase::header;
  with_role_ = with_role;
  header_text_.clear();
  header_units_.clear();
  where_ = "a message header";
  matcher_.emplace(grammar_->header(with_role, budget_spent_));
}

// The header is complete: the reference parser reads it (the header grammar only admits
// headers it parses with nothing left over) and its fields choose the content grammar.
void HarmonyConstraint::open_content() {
  const std::optional<harmony::Role> role = with_role_ ? std::nullopt : std::optional(harmony::Role::assistant);
  harmony::HeaderParse parsed = harmony::parse_header(header_text_, role, true);
  if (parsed.leftover)
    fail(gptoss_status_internal, "the header grammar admitted \"{}\", which leaves \"{}\" unparsed", header_text_,
         *parsed.leftover);
  const harmony::ParsedHeader& h = parsed.header;
  // Every message without recipient but the answer is reasoning: analysis, and commentary
  // preambles too, which otherwise could run on past the reasoning budget.
  counting_ = !h.recipient && h.channel != "final";
  where_ = h.recipient ? "the arguments of a call to " + *h.recipient
                       : "the content of a message on channel " + h.channel.value_or("(none)");
  matcher_.emplace(grammar_->content(h));
  phase_ = Phase::content;
}

void HarmonyConstraint::reject(uint32_t token) const {
  fail(gptoss_status_invalid_argument, "{} is not allowed in {}", describe_token(grammar_->vocab(), token), where_);
}

void HarmonyConstraint::accept(uint32_t token) {
  const Vocabulary& v = grammar_->vocab();
  if (budget_.limited() && phase_ != Phase::finished) {
    const uint64_t after = cost_after(token);
    if (after != Grammar::kNoCompletion && !budget_.fits_after_next(after))
      fail(gptoss_status_invalid_argument,
           "{} is not allowed in {}: the turn could not be finished within max_tokens after it ({} tokens left, "
           "{} needed)",
           describe_token(v, token), where_, budget_.after_next(), after);
  }
  accept_token_of_grammar(token);
  budget_.use();
}

void HarmonyConstraint::accept_token_of_grammar(uint32_t token) {
  const Vocabulary& v = grammar_->vocab();
  switch (phase_) {
    case Phase::finished:
      fail(gptoss_status_invalid_state, "the constraint is finished: the turn ended with <|call|> or <|return|>");
    case Phase::between_messages:
      where_ = "between messages (only <|start|>)";
      if (token != grammar_->start_id()) reject(token);
      open_header(true);
      return;
    case Phase::header:
      if (!matcher_->accept_token(token)) reject(token);
      if (token == grammar_->message_id()) {
        open_content();
        return;
      }
      header_text_ += v.is_special(token) ? v.special_name(token) : v.text_bytes(token);
      if (v.is_special(token)) header_units_.push_back(HarmonyGrammar::kSpecialUnit + token);
      else for (unsigned char c : v.text_bytes(token)) header_units_.push_back(c);
      return;
    case Phase::content:
      if (counting_ && budget_reached() && token != grammar_->end_id()) reject(token);
      if (!matcher_->accept_token(token)) reject(token);
      if (counting_ && !v.is_special(token)) {
        ++reasoning_tokens_;
        budget_spent_ = budget_spent_ || budget_reached();
      }
      if (!matcher_->finished()) return;
      if (token == grammar_->call_id() || token == grammar_->return_id()) {
        phase_ = Phase::finished;
        matcher_.reset();
      } else {
        phase_ = Phase::between_messages;
        counting_ = false;
        matcher_.reset();
      }
      return;
  }
}

// With a token budget the grammar's mask is narrowed where the budget is near: a token stays
// when the turn can still be finished after it. In content the matcher narrows its own tokens
// (a reasoning message's by what is left once its <|end|> and the answer are paid for); an
// <|end|>, and every token of a header (a few dozen), are priced one by one.
void HarmonyConstraint::fill_mask(TokenMask& mask) {
  if (!budget_.limited() || phase_ == Phase::finished || phase_ == Phase::between_messages ||
      (phase_ == Phase::content && counting_ && budget_reached())) {
    fill_grammar_mask(mask);  // one token at most, and the cheapest completion goes through it
    return;
  }
  const int64_t left = budget_.after_next();
  const uint32_t end = grammar_->end_id();
  bool held_back = false;
  auto price = [&](uint32_t token) {
    if (!mask.test(token) || budget_.fits_after_next(cost_after(token))) return;
    mask.words()[token >> 5] &= ~(1u << (token & 31));
    held_back = true;
  };
  if (phase_ == Phase::header) {
    fill_grammar_mask(mask);
    if (left < 0 || uint64_t(left) < grammar_->header_most_cost(with_role_, budget_spent_)) {
      std::vector<uint32_t> allowed;
      for (size_t i = 0; i < mask.num_words(); ++i)
        for (uint32_t bits = mask.words()[i]; bits != 0; bits &= bits - 1)
          allowed.push_back(uint32_t(i * 32 + __builtin_ctz(bits)));
      for (uint32_t t : allowed) price(t);
    }
  } else {
    const uint64_t after_content = counting_ ? grammar_->between_cost(spent_after_reasoning_token()) : 0;
    if (left < 0 || uint64_t(left) < after_content) {
      mask.clear();
      held_back = true;
      if (matcher_->allows_token(end)) mask.set(end);
    } else {
      held_back = matcher_->fill_mask(mask, uint64_t(left) - after_content);
    }
    price(end);
  }
  if (held_back && !budget_.closed) {
    TokenMask& all = scratch_.get(mask.num_tokens());
    fill_grammar_mask(all);
    budget_.closed = all.count() != mask.count();
  }
}

void HarmonyConstraint::fill_grammar_mask(TokenMask& mask) {
  switch (phase_) {
    case Phase::finished: mask.clear(); return;
    case Phase::between_messages:
      mask.clear();
      mask.set(grammar_->start_id());
      return;
    case Phase::header: matcher_->fill_mask(mask); return;
    case Phase::content:
      if (counting_ && budget_reached()) {
        mask.clear();
        mask.set(grammar_->end_id());
        return;
      }
      matcher_->fill_mask(mask);
      return;
  }
}

bool HarmonyConstraint::allows(uint32_t token) {
  if (budget_.limited()) return budget_.fits_after_next(cost_after(token));
  switch (phase_) {
    case Phase::finished: return false;
    case Phase::between_messages: return token == grammar_->start_id();
    case Phase::header: return matcher_->allows_token(token);
    case Phase::content:
      if (counting_ && budget_reached() && token != grammar_->end_id()) return false;
      return matcher_->allows_token(token);
  }
  return false;
}

}  // namespace gptoss::constrain
