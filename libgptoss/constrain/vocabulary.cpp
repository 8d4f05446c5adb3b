#include "libgptoss/constrain/vocabulary.hpp"

#include "libgptoss/common/error.hpp"
#include "libgptoss/tokenizer/token_trie.hpp"
#include "libgptoss/tokenizer/tokenizer.hpp"

namespace gptoss::constrain {

Vocabulary::Vocabulary(std::shared_ptr<const Tokenizer> tokenizer) : tokenizer_(std::move(tokenizer)) {
  if (!tokenizer_) fail(gptoss_status_invalid_argument, "tokenizer must not be NULL");
  num_text_ = tokenizer_->num_text_tokens();
  num_tokens_ = tokenizer_->num_tokens();
  trie_ = &tokenizer_->token_trie();
  for (uint32_t id = num_text_; id < num_tokens_; ++id) {
    std::string name(tokenizer_->token_bytes(id));
    special_ids_.emplace(name, id);
    special_names_.emplace(id, std::move(name));
  }
}

Vocabulary::Vocabulary(std::vector<std::string> text, std::vector<std::pair<std::string, uint32_t>> specials,
                       uint32_t num_tokens)
    : text_(std::move(text)), num_text_(uint32_t(text_.size())), num_tokens_(num_tokens) {
  std::vector<std::pair<uint32_t, std::string>> tokens;
  for (uint32_t id = 0; id < num_text_; ++id) tokens.emplace_back(id, text_[id]);
  own_trie_ = std::make_unique<const tokenizer::TokenTrie>(std::move(tokens));
  trie_ = own_trie_.get();
  for (auto& [name, id] : specials) {
    if (id < num_text_ || id >= num_tokens_)
      fail(gptoss_status_invalid_argument, "special token {} has id {} outside {}..{}", name, id, num_text_,
           num_tokens_ - 1);
    special_ids_.emplace(name, id);
    special_names_.emplace(id, name);
  }
}

Vocabulary::~Vocabulary() = default;

std::string_view Vocabulary::text_bytes(uint32_t id) const {
  if (id >= num_text_) return {};
  return tokenizer_ ? tokenizer_->token_bytes(id) : std::string_view(text_[id]);
}

std::optional<uint32_t> Vocabulary::special_id(std::string_view name) const {
  auto it = special_ids_.find(std::string(name));
  if (it == special_ids_.end()) return std::nullopt;
  return it->second;
}

std::string_view Vocabulary::special_name(uint32_t id) const {
  auto it = special_names_.find(id);
  if (it == special_names_.end()) fail(gptoss_status_internal, "token {} is not a special token", id);
  return it->second;
}

bool Vocabulary::has_every_byte() const {
  bool seen[256] = {};
  size_t n = 0;
  for (uint32_t id = 0; id < num_text_ && n < 256; ++id)
    if (const std::string_view b = text_bytes(id); b.size() == 1 && !seen[uint8_t(b[0])]) {
      seen[uint8_t(b[0])] = true;
      ++n;
    }
  return n == 256;
}

uint32_t Vocabulary::require_special(std::string_view name) const {
  auto id = special_id(name);
  if (!id) fail(gptoss_status_invalid_argument, "the tokenizer has no {} token: not a Harmony tokenizer", name);
  return *id;
}

}  // namespace gptoss::constrain
