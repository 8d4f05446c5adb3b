#pragma once
// o200k_harmony byte-level BPE (tiktoken semantics: merge ranks = token ids of the merged
// byte strings; pre-split by the o200k regex with PCRE2).

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gptoss {

namespace tokenizer {
class TokenTrie;
}

class Tokenizer {
 public:
  static constexpr uint32_t kNumTextTokens = 199998;  // o200k_base mergeable ranks
  static constexpr uint32_t kNumTokens = 201088;      // rows of the gpt-oss vocabulary

  // Loads the HF tokenizer.json. Throws gptoss::Error(io / invalid_argument) with a message.
  static std::shared_ptr<const Tokenizer> from_json_file(const std::string& path);
  // From GGUF metadata: tokenizer.ggml.tokens (byte-level "Ġ" strings) and token_type.
  static std::shared_ptr<const Tokenizer> from_vocab(const std::vector<std::string>& tokens,
                                                     const std::vector<int32_t>& token_types);

  // Plain text: special-token strings are ordinary text.
  std::vector<uint32_t> encode_ordinary(std::string_view text) const;
  // Every special-token string in `text` becomes its id.
  std::vector<uint32_t> encode_with_specials(std::string_view text) const;
  // tiktoken semantics: `allowed` specials become ids; if disallow_others, any other special
  // string in the text throws gptoss::Error(invalid_argument).
  std::vector<uint32_t> encode(std::string_view text, const std::vector<std::string>& allowed,
                               bool disallow_others) const;

  // Bytes of one token; throws gptoss::Error(invalid_argument) for an unknown id.
  std::string_view token_bytes(uint32_t id) const;
  // Concatenated bytes (specials as their strings); throws for unknown ids.
  std::string decode(std::span<const uint32_t> ids) const;

  bool is_special(uint32_t id) const;
  std::optional<uint32_t> special_id(std::string_view name) const;  // "<|start|>" -> 200006

  uint32_t num_text_tokens() const;
  uint32_t num_special_tokens() const;
  uint32_t num_tokens() const;

  // The text tokens as a byte trie (constrained decoding walks it): built on first use
  // (~0.1 s for o200k), then shared by every caller for the tokenizer's lifetime.
  const tokenizer::TokenTrie& token_trie() const;

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gptoss
