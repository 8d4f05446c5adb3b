#include "libgptoss/constrain/harmony_constraint.hpp"

#include "libgptoss/common/error.hpp"

namespace gptoss::constrain {

HarmonyConstraint::HarmonyConstraint(std::shared_ptr<const HarmonyGrammar> grammar, const ConstraintOptions& options)
    : grammar_(std::move(grammar)), options_(options) {
  reset();
}

void HarmonyConstraint::reset() {
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

void HarmonyConstraint::open_header(bool with_role) {
  phase_ = Phase::header;
  with_role_ = with_role;
  header_text_.clear();
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
  counting_ = h.channel == "analysis" && !h.recipient;
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
      if (token == grammar_->message_id()) open_content();
      else header_text_ += v.is_special(token) ? v.special_name(token) : v.text_bytes(token);
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

void HarmonyConstraint::fill_mask(TokenMask& mask) {
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
