#pragma once
// What one lexeme state decides about the vocabulary by itself, found once by walking the
// token trie with the lexeme's DFA (the part of xgrammar's adaptive token-mask cache that a
// lexer-based design needs):
//  - `inside`: tokens whose bytes the DFA consumes entirely (it stays live): allowed whatever
//    follows the lexeme in the grammar, since every DFA state leads to acceptance and every
//    grammar continuation can be completed;
//  - `exits`: tokens the DFA cannot consume entirely but that pass an accepting state after
//    `offset` bytes: the rest of the token must then be accepted by what follows the lexeme,
//    which only the matcher's stack knows, so these are checked at run time;
//  - every other token is rejected in this state, whatever the stack.
#include <cstdint>
#include <vector>

#include "libgptoss/constrain/dfa.hpp"
#include "libgptoss/constrain/token_mask.hpp"

namespace gptoss::tokenizer {
class TokenTrie;
}

namespace gptoss::constrain {

struct LexemeTokens {
  struct Exit {
    uint32_t token;
    uint32_t offset;  // bytes consumed by the lexeme, 1..size-1
  };

  std::vector<uint32_t> inside_ids;    // when few
  std::vector<uint32_t> inside_words;  // a full mask instead, when many (dense)
  std::vector<Exit> exits;

  void merge_inside_into(TokenMask& mask) const;
  size_t num_inside() const;
  size_t memory_bytes() const;

  static LexemeTokens compute(const Dfa& dfa, int32_t state, const tokenizer::TokenTrie& trie,
                              size_t num_tokens);
};

}  // namespace gptoss::constrain
