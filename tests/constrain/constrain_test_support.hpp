#pragma once
// Shared by the constrained-decoding tests: vocabularies (the real one, loaded once, and small
// hand-made ones where brute force is cheap) and a random walk that samples allowed tokens.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "libgptoss/constrain/constraint.hpp"
#include "libgptoss/constrain/dfa.hpp"
#include "libgptoss/constrain/vocabulary.hpp"
#include "libgptoss/tokenizer/tokenizer.hpp"
#include "support/paths.hpp"

namespace gptoss::test {

inline std::shared_ptr<const Tokenizer> constrain_tokenizer() {
  static const std::shared_ptr<const Tokenizer> tok = Tokenizer::from_json_file(tokenizer_json());
  return tok;
}

inline std::shared_ptr<const constrain::Vocabulary> real_vocab() {
  static const auto v = std::make_shared<const constrain::Vocabulary>(constrain_tokenizer());
  return v;
}

// Whether a DFA accepts the whole string.
inline bool dfa_accepts(const constrain::Dfa& d, const std::string& s) {
  int32_t st = d.start();
  for (char c : s) {
    if (st == constrain::Dfa::kDead) return false;
    st = d.step(st, static_cast<uint8_t>(c));
  }
  return st != constrain::Dfa::kDead && d.accepting(st);
}

// Allowed token ids of a mask.
inline std::vector<uint32_t> allowed_tokens(const constrain::TokenMask& mask) {
  std::vector<uint32_t> out;
  for (size_t w = 0; w < mask.num_words(); ++w)
    for (uint32_t bits = mask.words()[w]; bits != 0; bits &= bits - 1)
      out.push_back(uint32_t(w * 32 + size_t(__builtin_ctz(bits))));
  return out;
}

// Samples allowed tokens until the constraint finishes or `max_tokens` were taken; half the
// time it prefers tokens that close something ('"', ']', '}', special tokens), so walks end.
// Returns the tokens; `finished` says whether the constraint finished.
inline std::vector<uint32_t> random_walk(constrain::Constraint& c, const constrain::Vocabulary& v, std::mt19937& rng,
                                         size_t max_tokens, bool* finished) {
  std::vector<uint32_t> tokens;
  constrain::TokenMask mask(c.num_tokens());
  while (!c.finished() && tokens.size() < max_tokens) {
    c.fill_mask(mask);
    std::vector<uint32_t> allowed = allowed_tokens(mask);
    if (allowed.empty()) break;
    std::vector<uint32_t> closing;
    for (uint32_t t : allowed) {
      std::string_view b = v.text_bytes(t);
      if (v.is_special(t) || b.find_first_of("\"]}") != std::string_view::npos) closing.push_back(t);
    }
    const auto& pool = (!closing.empty() && rng() % 2 == 0) ? closing : allowed;
    const uint32_t t = pool[rng() % pool.size()];
    c.accept(t);
    tokens.push_back(t);
  }
  if (finished) *finished = c.finished();
  return tokens;
}

// Text of text tokens (special tokens as their names).
inline std::string text_of_tokens(const constrain::Vocabulary& v, const std::vector<uint32_t>& tokens) {
  std::string s;
  for (uint32_t t : tokens) s += v.is_special(t) ? std::string(v.special_name(t)) : std::string(v.text_bytes(t));
  return s;
}

}  // namespace gptoss::test
