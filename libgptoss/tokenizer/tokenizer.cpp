// Building a Tokenizer from tokenizer.json or GGUF metadata, and its small accessors.
#include "libgptoss/tokenizer/tokenizer.hpp"

#include <algorithm>

#include "libgptoss/common/error.hpp"
#include "libgptoss/common/log.hpp"
#include "libgptoss/tokenizer/byte_level.hpp"
#include "libgptoss/tokenizer/json_vocab.hpp"
#include "libgptoss/tokenizer/special_tokens.hpp"
#include "libgptoss/tokenizer/tokenizer_impl.hpp"

namespace gptoss {

using tokenizer::kEndSpecialId;
using tokenizer::kFirstSpecialId;
static_assert(Tokenizer::kNumTextTokens == kFirstSpecialId);
static_assert(Tokenizer::kNumTokens == kEndSpecialId);

namespace {

// Text tokens given as (byte-level string, id), in any order -> arena + offsets by id.
// Throws gptoss::Error(invalid_argument) unless ids 0..kNumTextTokens-1 each appear once.
struct TextVocab {
  std::string arena;
  std::vector<uint32_t> offsets;
};

TextVocab arrange_text_vocab(const std::vector<std::pair<std::string_view, uint32_t>>& entries) {
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> begin(Tokenizer::kNumTextTokens, kNone);
  std::vector<uint32_t> size(Tokenizer::kNumTextTokens, 0);
  std::string decoded;
  decoded.reserve(entries.size() * 8);
  for (const auto& [spelled, id] : entries) {
    if (id >= Tokenizer::kNumTextTokens) {
      fail(gptoss_status_invalid_argument,
           "vocabulary has text token id {}; o200k_harmony has {} text tokens", id,
           Tokenizer::kNumTextTokens);
    }
    if (begin[id] != kNone) fail(gptoss_status_invalid_argument, "token id {} appears twice", id);
    const size_t at = decoded.size();
    if (!tokenizer::append_byte_level_decoded(spelled, decoded)) {
      fail(gptoss_status_invalid_argument, "token {} ('{}') is not a byte-level string", id,
           spelled);
    }
    begin[id] = static_cast<uint32_t>(at);
    size[id] = static_cast<uint32_t>(decoded.size() - at);
  }
  TextVocab out;
  out.arena.reserve(decoded.size());
  out.offsets.reserve(Tokenizer::kNumTokens + 1);
  for (uint32_t id = 0; id < Tokenizer::kNumTextTokens; ++id) {
    if (begin[id] == kNone) fail(gptoss_status_invalid_argument, "token id {} is missing", id);
    out.offsets.push_back(static_cast<uint32_t>(out.arena.size()));
    out.arena.append(decoded, begin[id], size[id]);
  }
  out.offsets.push_back(static_cast<uint32_t>(out.arena.size()));
  return out;
}

}  // namespace

std::unique_ptr<Tokenizer::Impl> Tokenizer::Impl::build(std::string text_arena,
                                                        std::vector<uint32_t> text_offsets,
                                                        const std::string& split_pattern) {
  auto impl = std::make_unique<Impl>();
  impl->arena = std::move(text_arena);
  impl->offsets = std::move(text_offsets);
  for (uint32_t id = kFirstSpecialId; id < kEndSpecialId; ++id) {
    impl->arena += tokenizer::special_token_name(id);
    impl->offsets.push_back(static_cast<uint32_t>(impl->arena.size()));
  }
  for (uint32_t id = kFirstSpecialId; id < kEndSpecialId; ++id) {
    std::string_view name = impl->bytes_of(id);
    impl->special_ids.emplace(name, id);
    impl->longest_special_name = std::max(impl->longest_special_name, name.size());
  }
  impl->ranks = std::make_unique<tokenizer::RankTable>(
      impl->arena, std::span<const uint32_t>(impl->offsets.data(), kNumTextTokens + 1));
  impl->split = std::make_unique<tokenizer::PreSplit>(split_pattern);
  return impl;
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

std::shared_ptr<const Tokenizer> Tokenizer::from_json_file(const std::string& path) {
  tokenizer::JsonVocab json = tokenizer::read_json_vocab(path);
  try {
    std::vector<std::pair<std::string_view, uint32_t>> entries;
    entries.reserve(json.vocab.size());
    for (const auto& [spelled, id] : json.vocab) entries.emplace_back(spelled, id);
    TextVocab text = arrange_text_vocab(entries);
    for (const auto& [content, id] : json.added_tokens) {
      if (id < kFirstSpecialId || id >= kEndSpecialId) {
        fail(gptoss_status_invalid_argument, "added token '{}' has id {} outside {}..{}", content,
             id, kFirstSpecialId, kEndSpecialId - 1);
      }
      if (content != tokenizer::special_token_name(id)) {
        log().warn("tokenizer '{}': added token {} is '{}'; o200k_harmony calls it '{}'", path, id,
                   content, tokenizer::special_token_name(id));
      }
    }
    if (json.split_pattern.empty()) {
      fail(gptoss_status_invalid_argument, "no pre_tokenizer Split regex");
    }
    if (json.split_pattern != tokenizer::kO200kPattern) {
      log().warn("tokenizer '{}': split regex differs from o200k's; using the file's", path);
    }
    auto impl = Impl::build(std::move(text.arena), std::move(text.offsets), json.split_pattern);
    return std::shared_ptr<const Tokenizer>(new Tokenizer(std::move(impl)));
  } catch (const Error& e) {
    // Whatever is wrong inside the file makes it a corrupt tokenizer file.
    if (e.status() != gptoss_status_invalid_argument) throw;
    fail(gptoss_status_io, "tokenizer file '{}': {}", path, e.what());
  }
}

std::shared_ptr<const Tokenizer> Tokenizer::from_vocab(const std::vector<std::string>& tokens,
                                                       const std::vector<int32_t>& token_types) {
  if (!token_types.empty() && token_types.size() != tokens.size()) {
    fail(gptoss_status_invalid_argument, "{} tokens but {} token types", tokens.size(),
         token_types.size());
  }
  if (tokens.size() < kNumTextTokens || tokens.size() > kNumTokens) {
    fail(gptoss_status_invalid_argument,
         "vocabulary has {} tokens; o200k_harmony needs {} text tokens and at most {} in all",
         tokens.size(), kNumTextTokens, kNumTokens);
  }
  constexpr int32_t kControl = 3, kUserDefined = 4, kUnused = 5;
  std::vector<std::pair<std::string_view, uint32_t>> entries;
  entries.reserve(kNumTextTokens);
  for (uint32_t id = 0; id < kNumTextTokens; ++id) {
    const int32_t type = token_types.empty() ? 1 : token_types[id];
    if (type == kControl || type == kUserDefined || type == kUnused) {
      fail(gptoss_status_invalid_argument, "token {} ('{}') has type {}, expected a text token", id,
           tokens[id], type);
    }
    entries.emplace_back(tokens[id], id);
  }
  for (uint32_t id = kNumTextTokens; id < tokens.size(); ++id) {
    // GGUF names the unused slots [PADn]; only a real name that disagrees is worth a note.
    const int32_t type = token_types.empty() ? kControl : token_types[id];
    if (type != kUnused && tokens[id] != tokenizer::special_token_name(id)) {
      log().warn("vocabulary token {} is '{}'; o200k_harmony calls it '{}'", id, tokens[id],
                 tokenizer::special_token_name(id));
    }
  }
  TextVocab text = arrange_text_vocab(entries);
  auto impl = Impl::build(std::move(text.arena), std::move(text.offsets), tokenizer::kO200kPattern);
  return std::shared_ptr<const Tokenizer>(new Tokenizer(std::move(impl)));
}

std::string_view Tokenizer::token_bytes(uint32_t id) const {
  if (id >= kNumTokens) {
    fail(gptoss_status_invalid_argument, "token id {} is outside the vocabulary (0..{})", id,
         kNumTokens - 1);
  }
  return impl_->bytes_of(id);
}

bool Tokenizer::is_special(uint32_t id) const {
  return id >= kFirstSpecialId && id < kEndSpecialId;
}

std::optional<uint32_t> Tokenizer::special_id(std::string_view name) const {
  auto it = impl_->special_ids.find(name);
  if (it == impl_->special_ids.end()) return std::nullopt;
  return it->second;
}

uint32_t Tokenizer::num_text_tokens() const { return kNumTextTokens; }
uint32_t Tokenizer::num_special_tokens() const { return kNumTokens - kNumTextTokens; }
uint32_t Tokenizer::num_tokens() const { return kNumTokens; }

const tokenizer::TokenTrie& Tokenizer::token_trie() const {
  std::call_once(impl_->trie_once, [this] {
    std::vector<std::pair<uint32_t, std::string>> tokens;
    tokens.reserve(kNumTextTokens);
    for (uint32_t id = 0; id < kNumTextTokens; ++id)
      tokens.emplace_back(id, std::string(impl_->bytes_of(id)));
    impl_->trie = std::make_unique<tokenizer::TokenTrie>(std::move(tokens));
  });
  return *impl_->trie;
}

}  // namespace gptoss
