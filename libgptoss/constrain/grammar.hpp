#pragma once
// A compiled grammar: a context-free grammar whose terminals are lexemes (byte-level DFAs)
// and special tokens. Rules are flattened into one array of symbols: each alternative is a
// run of symbols ended by an `end` symbol, so a position in the grammar is one index.
// Immutable once built (grammar_builder.hpp), except for the per-lexeme-state token sets it
// computes on first use (thread-safe): it is shared by every sequence that uses it.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "libgptoss/constrain/dfa.hpp"
#include "libgptoss/constrain/lexeme_tokens.hpp"
#include "libgptoss/constrain/vocabulary.hpp"

namespace gptoss::constrain {

struct Symbol {
  enum class Kind : uint8_t { lexeme, special, rule, end };
  Kind kind = Kind::end;
  uint32_t id = 0;  // lexeme index, special token id or rule index
};

class Grammar {
 public:
  Grammar(std::shared_ptr<const Vocabulary> vocab, std::vector<Dfa> lexemes, std::vector<Symbol> symbols,
          std::vector<std::vector<uint32_t>> alternatives, uint32_t root);

  const Vocabulary& vocab() const { return *vocab_; }
  const std::shared_ptr<const Vocabulary>& vocab_ptr() const { return vocab_; }
  const Dfa& lexeme(uint32_t id) const { return lexemes_[id]; }
  size_t num_lexemes() const { return lexemes_.size(); }
  const Symbol& at(uint32_t pos) const { return symbols_[pos]; }
  size_t num_symbols() const { return symbols_.size(); }
  // Positions of the first symbol of each alternative of `rule`.
  std::span<const uint32_t> alternatives(uint32_t rule) const { return alternatives_[rule]; }
  size_t num_rules() const { return alternatives_.size(); }
  uint32_t root() const { return root_; }

  // Costs of completions, for closing an output within a token budget: a completion's bytes
  // plus its special tokens, so a vocabulary with a token for every byte can always spell it
  // in that many tokens or fewer. kNoCompletion where none exists.
  static constexpr uint64_t kNoCompletion = uint64_t(1) << 40;
  static uint64_t add_costs(uint64_t a, uint64_t b) { return std::min(a + b, kNoCompletion); }
  // Bytes from `state` of `lexeme` to its nearest accepting state.
  uint64_t bytes_to_accept(uint32_t lexeme, int32_t state) const { return to_accept_[first_slot_[lexeme] + size_t(state)]; }
  // The most bytes_to_accept of any state of `lexeme`.
  uint64_t most_bytes_to_accept(uint32_t lexeme) const { return most_to_accept_[lexeme]; }
  // The cheapest completion of the symbols from `pos` to the end of its alternative.
  uint64_t rest_cost(uint32_t pos) const { return rest_cost_[pos]; }
  // The cheapest complete output.
  uint64_t min_cost() const { return rest_cost_.empty() ? kNoCompletion : rule_cost_[root_]; }

  // The text tokens a lexeme accepts from `state` (computed on first request, then cached;
  // beyond kMaxCacheBytes of cached sets they are computed each time).
  std::shared_ptr<const LexemeTokens> tokens(uint32_t lexeme, int32_t state) const;
  size_t memory_bytes() const;

  static constexpr size_t kMaxCacheBytes = size_t(256) << 20;

 private:
  std::shared_ptr<const Vocabulary> vocab_;
  std::vector<Dfa> lexemes_;
  std::vector<Symbol> symbols_;
  std::vector<std::vector<uint32_t>> alternatives_;
  uint32_t root_;

  void compute_costs();

  std::vector<size_t> first_slot_;  // lexeme -> index of its state 0 in cache_ and to_accept_
  std::vector<uint32_t> to_accept_;
  std::vector<uint64_t> most_to_accept_;
  std::vector<uint64_t> rule_cost_;
  std::vector<uint64_t> rest_cost_;
  mutable std::mutex cache_mutex_;
  mutable std::vector<std::shared_ptr<const LexemeTokens>> cache_;
  mutable size_t cache_bytes_ = 0;
};

}  // namespace gptoss::constrain
