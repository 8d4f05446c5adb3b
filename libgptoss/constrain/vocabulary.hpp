#pragma once
// The tokens a grammar chooses among: text tokens (bytes, walked as a trie) and special tokens
// (single terminals of their own). Made from a Tokenizer (sharing its trie) or, for tests,
// from an explicit list.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gptoss {
class Tokenizer;
namespace tokenizer {
class TokenTrie;
}
}  // namespace gptoss

namespace gptoss::constrain {

class Vocabulary {
 public:
  explicit Vocabulary(std::shared_ptr<const Tokenizer> tokenizer);
  // Ids 0..text.size()-1 are text tokens; each special (name, id) has an id >= text.size()
  // and < num_tokens.
  Vocabulary(std::vector<std::string> text, std::vector<std::pair<std::string, uint32_t>> specials,
             uint32_t num_tokens);
  ~Vocabulary();

  uint32_t num_tokens() const { return num_tokens_; }
  uint32_t num_text_tokens() const { return num_text_; }
  // Bytes of a text token; empty for special tokens and unknown ids.
  std::string_view text_bytes(uint32_t id) const;
  bool is_special(uint32_t id) const { return special_names_.count(id) != 0; }
  std::optional<uint32_t> special_id(std::string_view name) const;
  // The special token's name ("<|start|>"); throws for other ids.
  std::string_view special_name(uint32_t id) const;
  // Throws gptoss::Error(invalid_argument) naming the token when the vocabulary lacks it.
  uint32_t require_special(std::string_view name) const;
  const tokenizer::TokenTrie& trie() const { return *trie_; }
  // Whether every byte is a text token of its own, so that any text can be written in as
  // many tokens as it has bytes (o200k's byte-level BPE: yes).
  bool has_every_byte() const;

 private:
  std::shared_ptr<const Tokenizer> tokenizer_;          // when made from a tokenizer
  std::vector<std::string> text_;                        // otherwise
  std::unique_ptr<const tokenizer::TokenTrie> own_trie_;
  const tokenizer::TokenTrie* trie_ = nullptr;
  std::unordered_map<uint32_t, std::string> special_names_;
  std::unordered_map<std::string, uint32_t> special_ids_;
  uint32_t num_text_ = 0;
  uint32_t num_tokens_ = 0;
};

}  // namespace gptoss::constrain
