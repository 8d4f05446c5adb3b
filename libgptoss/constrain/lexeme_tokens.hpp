#pragma once
// What one lexeme state decides about the vocabulary by itself, found once by walking the
// token trie with the lexeme's DFA (the part of xgrammar's adaptive token-mask cache that a
// lexer-based design needs):
//  - `inside`: tokens whose bytes the DFA consumes entirely (it stays live): allowed whatever
//    follows the lexeme in the grammar, since every DFA state leads to acceptance and every
//    grammar continuation can be completed;
//  - `exits`: tokens the DFA cannot consume entirely but that pass an accepting state after
//    `offset` bytes: the rest of the token must then be accepted by what follows the lexeme,
//    which only the matcher's stack knows, so these are checked at run time. They are kept as
//    trie subtrees (every token below the node where the DFA died), so the run time check
//    walks the trie from there and a rejected prefix skips its whole subtree: after
//    '"key": ?' some 100,000 tokens " word" leave the lexeme after the space, in a few hundred
//    subtrees that mostly die on their next byte;
//  - every other token is rejected in this state, whatever the stack.
#include <cstdint>
#include <vector>

#include "libgptoss/constrain/dfa.hpp"
#include "libgptoss/constrain/token_mask.hpp"

namespace gptoss::constrain {

class Vocabulary;

struct LexemeTokens {
  struct Exit {
    uint32_t node;    // trie node where the DFA died: its whole subtree leaves the lexeme
    uint32_t offset;  // bytes consumed by the lexeme (an accepting state), < the node's depth
  };

  std::vector<uint32_t> inside_ids;    // when few
  std::vector<uint32_t> inside_words;  // a full mask instead, when many (dense)
  std::vector<Exit> exits;            // in trie order

  void merge_inside_into(TokenMask& mask) const;
  size_t num_inside() const;
  size_t memory_bytes() const;

  static LexemeTokens compute(const Dfa& dfa, int32_t state, const Vocabulary& vocab);
};

}  // namespace gptoss::constrain
