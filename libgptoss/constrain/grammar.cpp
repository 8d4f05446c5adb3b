#include "libgptoss/constrain/grammar.hpp"


namespace gptoss::constrain {

Grammar::Grammar(std::shared_ptr<const Vocabulary> vocab, std::vector<Dfa> lexemes, std::vector<Symbol> symbols,
                 std::vector<std::vector<uint32_t>> alternatives, uint32_t root)
    : vocab_(std::move(vocab)),
      lexemes_(std::move(lexemes)),
      symbols_(std::move(symbols)),
      alternatives_(std::move(alternatives)),
      root_(root) {
  size_t slots = 0;
  for (const Dfa& d : lexemes_) {
    first_slot_.push_back(slots);
    slots += d.num_states();
  }
  cache_.resize(slots);
}

std::shared_ptr<const LexemeTokens> Grammar::tokens(uint32_t lexeme, int32_t state) const {
  const size_t slot = first_slot_[lexeme] + size_t(state);
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_[slot]) return cache_[slot];
  }
  // Computed outside the lock: another thread may compute the same set meanwhile (the first
  // one stored wins; both are equal).
  auto computed = std::make_shared<const LexemeTokens>(
      LexemeTokens::compute(lexemes_[lexeme], state, *vocab_));
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_[slot]) return cache_[slot];
  if (cache_bytes_ + computed->memory_bytes() > kMaxCacheBytes) return computed;
  cache_bytes_ += computed->memory_bytes();
  cache_[slot] = computed;
  return computed;
}

size_t Grammar::memory_bytes() const {
  size_t n = symbols_.size() * sizeof(Symbol) + cache_.size() * sizeof(cache_[0]);
  for (const Dfa& d : lexemes_) n += d.memory_bytes();
  for (const auto& a : alternatives_) n += a.size() * sizeof(uint32_t);
  return n;
}

}  // namespace gptoss::constrain
