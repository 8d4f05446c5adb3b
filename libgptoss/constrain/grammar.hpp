#pragma once
// A compiled grammar: a context-free grammar whose terminals are lexemes (byte-level DFAs)
// and special tokens. Rules are flattened into one array of symbols: each alternative is a
// run of symbols ended by an `end` symbol, so a position in the grammar is one index.
// Immutable once built (grammar_builder.hpp), except for the per-lexeme-state token sets it
// computes on first use (thread-safe): it is shared by every sequence that uses it.
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

  std::vector<size_t> first_slot_;  // lexeme -> index of its state 0 in cache_
  mutable std::mutex cache_mutex_;
  mutable std::vector<std::shared_ptr<const LexemeTokens>> cache_;
  mutable size_t cache_bytes_ = 0;
};

}  // namespace gptoss::constrain
