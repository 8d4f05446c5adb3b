#pragma once
// Builds a Grammar: rules of alternatives over lexemes (regex.hpp trees), special tokens and
// other rules. build() merges adjacent lexemes of an alternative into one (fewer lexeme
// boundaries to cross at run time), compiles each to a DFA (identical DFAs shared), drops
// alternatives that can never complete, rejects left recursion (it would loop), and bounds the
// result's size. Errors are gptoss::Error naming the rule's `where` (a JSON pointer, say).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "libgptoss/constrain/grammar.hpp"
#include "libgptoss/constrain/regex.hpp"

namespace gptoss::constrain {

struct GrammarLimits {
  size_t max_lexeme_states = size_t(1) << 16;  // states of one lexeme's DFA
  size_t max_bytes = size_t(64) << 20;          // DFA tables + symbols of the whole grammar
  size_t max_symbols = size_t(1) << 20;         // symbols in all alternatives
};

class GrammarBuilder {
 public:
  explicit GrammarBuilder(std::shared_ptr<const Vocabulary> vocab, GrammarLimits limits = {});

  const Vocabulary& vocab() const { return *vocab_; }
  // A byte-level terminal, merged with the lexemes next to it in an alternative. `where`
  // names it in errors (its automaton too large, say).
  Symbol lexeme(Regex regex, std::string where = {});
  // A terminal never merged with its neighbours, so that all its uses share one DFA and one
  // cache of token sets (a free JSON string, say: its wide states are costly to compute).
  Symbol shared_lexeme(Regex regex);
  Symbol special(uint32_t token) const { return {Symbol::Kind::special, token}; }
  Symbol rule_symbol(uint32_t rule) const { return {Symbol::Kind::rule, rule}; }

  // `where` names the rule in error messages.
  uint32_t add_rule(std::string where);
  void add_alternative(uint32_t rule, std::vector<Symbol> symbols);
  // A rule with the given alternatives.
  uint32_t rule_of(std::string where, std::vector<std::vector<Symbol>> alternatives);

  std::shared_ptr<const Grammar> build(uint32_t root);

 private:
  struct PendingLexeme {
    Regex regex;
    bool shared;
    std::string where;
  };
  void merge_lexemes();
  std::vector<Dfa> compile_lexemes(std::vector<uint32_t>& lexeme_index);
  void drop_dead_alternatives(const std::vector<Dfa>& dfas, const std::vector<uint32_t>& lexeme_index, uint32_t root);
  void check_left_recursion(const std::vector<Dfa>& dfas, const std::vector<uint32_t>& lexeme_index);

  std::shared_ptr<const Vocabulary> vocab_;
  GrammarLimits limits_;
  std::vector<PendingLexeme> lexemes_;
  std::vector<std::vector<std::vector<Symbol>>> rules_;
  std::vector<std::string> where_;
  size_t num_symbols_ = 0;
};

}  // namespace gptoss::constrain
