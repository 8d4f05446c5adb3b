#include "libgptoss/constrain/constraint.hpp"

#include "libgptoss/common/error.hpp"
#include "libgptoss/constrain/harmony_constraint.hpp"
#include "libgptoss/constrain/matcher.hpp"

namespace gptoss::constrain {
namespace {

// A plain grammar (a JSON Schema document and its end token).
class GrammarConstraint final : public Constraint {
 public:
  explicit GrammarConstraint(std::shared_ptr<const Grammar> grammar) : matcher_(std::move(grammar)) {}

  void reset() override { matcher_.reset(); }
  void accept(uint32_t token) override {
    const Vocabulary& v = matcher_.grammar().vocab();
    if (matcher_.finished())
      fail(gptoss_status_invalid_state, "the constraint is finished: the document and its end token are complete");
    if (!matcher_.accept_token(token))
      fail(gptoss_status_invalid_argument, "{} is not allowed here by the JSON Schema grammar", describe_token(v, token));
  }
  void fill_mask(TokenMask& mask) override {
    if (matcher_.finished()) mask.clear();
    else matcher_.fill_mask(mask);
  }
  bool allows(uint32_t token) override { return !matcher_.finished() && matcher_.allows_token(token); }
  bool finished() const override { return matcher_.finished(); }
  size_t num_tokens() const override { return matcher_.grammar().vocab().num_tokens(); }
  std::unique_ptr<Constraint> clone() const override { return std::make_unique<GrammarConstraint>(*this); }

 private:
  Matcher matcher_;
};

}  // namespace

std::unique_ptr<Constraint> CompiledGrammar::make_constraint(const ConstraintOptions& options) const {
  if (harmony) return std::make_unique<HarmonyConstraint>(harmony, options);
  return std::make_unique<GrammarConstraint>(json);
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
