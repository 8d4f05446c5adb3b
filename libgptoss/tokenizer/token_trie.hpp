#pragma once
// The text tokens of a vocabulary as a byte trie laid out in depth-first preorder: node i is
// one byte at depth depth[i] below its parent (the nearest earlier node one level up), and
// skip[i] is the first node after its subtree. A walk visits nodes in order and jumps to
// skip[i] when a prefix is rejected, so it costs the accepted prefixes, not the vocabulary.
// Constrained decoding walks it to find the tokens a grammar state allows.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gptoss::tokenizer {

class TokenTrie {
 public:
  // (id, bytes) of every text token; empty byte strings are left out.
  explicit TokenTrie(std::vector<std::pair<uint32_t, std::string>> tokens);

  size_t num_nodes() const { return byte_.size(); }
  uint8_t byte(size_t node) const { return byte_[node]; }
  uint32_t depth(size_t node) const { return depth_[node]; }  // 1 for a first byte
  uint32_t skip(size_t node) const { return skip_[node]; }
  // Tokens whose bytes end at `node` (usually zero or one).
  std::pair<const uint32_t*, const uint32_t*> tokens_at(size_t node) const {
    return {ids_.data() + first_id_[node], ids_.data() + first_id_[node + 1]};
  }
  uint32_t max_depth() const { return max_depth_; }
  size_t num_tokens() const { return ids_.size(); }

 private:
  std::vector<uint8_t> byte_;
  std::vector<uint32_t> depth_;
  std::vector<uint32_t> skip_;
  std::vector<uint32_t> first_id_;  // num_nodes + 1 offsets into ids_
  std::vector<uint32_t> ids_;
  uint32_t max_depth_ = 0;
};

}  // namespace gptoss::tokenizer
