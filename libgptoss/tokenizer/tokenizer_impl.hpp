#pragma once
// What a Tokenizer holds. Built once, then only read (the piece cache locks internally), so one
// Tokenizer serves any number of threads.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "libgptoss/tokenizer/piece_cache.hpp"
#include "libgptoss/tokenizer/pre_split.hpp"
#include "libgptoss/tokenizer/rank_table.hpp"
#include "libgptoss/tokenizer/token_trie.hpp"
#include "libgptoss/tokenizer/tokenizer.hpp"

namespace gptoss {

struct Tokenizer::Impl {
  // Bytes of every id, text tokens then special-token names: id i is
  // arena[offsets[i], offsets[i + 1]). Never moved after the rank table points into it.
  std::string arena;
  std::vector<uint32_t> offsets;  // kNumTokens + 1
  std::unique_ptr<tokenizer::RankTable> ranks;
  std::unique_ptr<tokenizer::PreSplit> split;
  std::unordered_map<std::string_view, uint32_t> special_ids;  // name -> id, views into arena
  size_t longest_special_name = 0;
  tokenizer::PieceCache cache;
  // Built on the first token_trie() call.
  std::once_flag trie_once;
  std::unique_ptr<tokenizer::TokenTrie> trie;

  // `text_arena`/`text_offsets` spell ids 0..kNumTextTokens-1; the specials are appended.
  static std::unique_ptr<Impl> build(std::string text_arena, std::vector<uint32_t> text_offsets,
                                     const std::string& split_pattern);

  std::string_view bytes_of(uint32_t id) const {
    return {arena.data() + offsets[id], offsets[id + 1] - offsets[id]};
  }
  // Appends the ids of `text` with every special-token string treated as text.
  void encode_ordinary_into(std::string_view text, std::vector<uint32_t>& out) const;
  // Appends the ids of one pre-split piece.
  void encode_piece(std::string_view piece, std::vector<uint32_t>& out) const;
};

}  // namespace gptoss
