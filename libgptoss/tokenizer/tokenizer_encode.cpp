// Encoding (pre-split + BPE, special-token search) and decoding.
#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "libgptoss/common/error.hpp"
#include "libgptoss/tokenizer/byte_pair_merge.hpp"
#include "libgptoss/tokenizer/tokenizer_impl.hpp"

namespace gptoss {

void Tokenizer::Impl::encode_piece(std::string_view piece, std::vector<uint32_t>& out) const {
  // Most pieces are whole tokens (tiktoken checks this first too).
  if (const uint32_t id = ranks->find(piece); id != tokenizer::kNoRank) {
    out.push_back(id);
    return;
  }
  if (cache.lookup(piece, out)) return;
  const size_t first = out.size();
  tokenizer::byte_pair_merge(*ranks, piece, out);
  cache.insert(piece, out.data() + first, out.size() - first);
}

void Tokenizer::Impl::encode_ordinary_into(std::string_view text,
                                           std::vector<uint32_t>& out) const {
  split->split(
      text, [&](size_t begin, size_t end) { encode_piece(text.substr(begin, end - begin), out); },
      // Gaps are malformed UTF-8: one token per byte, so decoding gives the bytes back.
      [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) out.push_back(ranks->byte_rank(text[i]));
      });
}

namespace {

// Finds special-token strings left to right. `accept(id)` says whether the string is
// encoded as its id (true) or left as text (false); it may throw.
template <typename Accept>
std::vector<uint32_t> encode_around_specials(const Tokenizer::Impl& impl, std::string_view text,
                                             Accept&& accept) {
  std::vector<uint32_t> out;
  out.reserve(text.size() / 3 + 8);
  size_t segment = 0;  // start of the text not yet encoded
  size_t pos = 0;
  while ((pos = text.find("<|", pos)) != std::string_view::npos) {
    // Names contain no '|', so the first "|>" after "<|" decides; look only as far as the
    // longest name so that a text full of "<|" stays linear.
    const size_t window = std::min(text.size() - pos, impl.longest_special_name);
    const size_t close = text.substr(pos, window).find("|>", 2);
    if (close != std::string_view::npos) {
      auto it = impl.special_ids.find(text.substr(pos, close + 2));
      if (it != impl.special_ids.end() && accept(it->second, it->first)) {
        impl.encode_ordinary_into(text.substr(segment, pos - segment), out);
        out.push_back(it->second);
        pos += close + 2;
        segment = pos;
        continue;
      }
    }
    ++pos;
  }
  impl.encode_ordinary_into(text.substr(segment), out);
  return out;
}

}  // namespace

std::vector<uint32_t> Tokenizer::encode_ordinary(std::string_view text) const {
  std::vector<uint32_t> out;
  out.reserve(text.size() / 3 + 8);
  impl_->encode_ordinary_into(text, out);
  return out;
}

std::vector<uint32_t> Tokenizer::encode_with_specials(std::string_view text) const {
  return encode_around_specials(*impl_, text, [](uint32_t, std::string_view) { return true; });
}

std::vector<uint32_t> Tokenizer::encode(std::string_view text,
                                        const std::vector<std::string>& allowed,
                                        bool disallow_others) const {
  // As tiktoken: names in `allowed` that are not special tokens are ignored.
  std::unordered_set<uint32_t> allowed_ids;
  for (const std::string& name : allowed) {
    if (auto id = special_id(name)) allowed_ids.insert(*id);
  }
  return encode_around_specials(*impl_, text, [&](uint32_t id, std::string_view name) {
    if (allowed_ids.count(id) != 0) return true;
    if (disallow_others) {
      fail(gptoss_status_invalid_argument,
           "text contains disallowed special token {}; allow it or encode it as plain text",
           name);
    }
    return false;
  });
}

std::string Tokenizer::decode(std::span<const uint32_t> ids) const {
  size_t size = 0;
  for (uint32_t id : ids) size += token_bytes(id).size();  // validates every id first
  std::string out;
  out.reserve(size);
  for (uint32_t id : ids) out += impl_->bytes_of(id);
  return out;
}

}  // namespace gptoss
