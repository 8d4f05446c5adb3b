#include "libgptoss/constrain/lexeme_tokens.hpp"

#include "libgptoss/constrain/vocabulary.hpp"
#include "libgptoss/tokenizer/token_trie.hpp"

namespace gptoss::constrain {

void LexemeTokens::merge_inside_into(TokenMask& mask) const {
  if (!inside_words.empty()) {
    mask.merge(inside_words.data());
  } else {
    for (uint32_t t : inside_ids) mask.set(t);
  }
}

size_t LexemeTokens::num_inside() const {
  if (inside_words.empty()) return inside_ids.size();
  size_t n = 0;
  for (uint32_t w : inside_words) n += size_t(__builtin_popcount(w));
  return n;
}

size_t LexemeTokens::memory_bytes() const {
  return sizeof(*this) + 4 * (inside_ids.capacity() + inside_words.capacity()) + sizeof(Exit) * exits.capacity();
}

LexemeTokens LexemeTokens::compute(const Dfa& dfa, int32_t state, const Vocabulary& vocab) {
  const tokenizer::TokenTrie& trie = vocab.trie();
  const size_t num_tokens = vocab.num_tokens();
  LexemeTokens out;
  std::vector<int32_t> states(trie.max_depth() + 1);
  std::vector<uint32_t> accepting_depths;  // depths >= 1 on the current path where the DFA accepts
  states[0] = state;
  const size_t n = trie.num_nodes();
  for (size_t i = 0; i < n;) {
    const uint32_t depth = trie.depth(i);
    while (!accepting_depths.empty() && accepting_depths.back() >= depth) accepting_depths.pop_back();
    const int32_t next = dfa.step(states[depth - 1], trie.byte(i));
    if (next == Dfa::kDead) {
      // Every token below this node dies here; if the path passed an accepting state they may
      // still go on after the lexeme.
      for (uint32_t d : accepting_depths) out.exits.push_back({uint32_t(i), d});
      i = trie.skip(i);
      continue;
    }
    states[depth] = next;
    for (auto [t, end] = trie.tokens_at(i); t != end; ++t) out.inside_ids.push_back(*t);
    if (dfa.accepting(next)) accepting_depths.push_back(depth);
    ++i;
  }
  // Dense when a list would be larger than a mask.
  if (out.inside_ids.size() > (num_tokens + 31) / 32) {
    TokenMask m(num_tokens);
    for (uint32_t t : out.inside_ids) m.set(t);
    out.inside_words.assign(m.words(), m.words() + m.num_words());
    out.inside_ids = {};
  }
  out.inside_ids.shrink_to_fit();
  out.exits.shrink_to_fit();
  return out;
}

}  // namespace gptoss::constrain
