#pragma once
// A set of token ids as uint32 words, bit i % 32 of word i / 32 = token i: the format of
// gptoss_constraint_fill_mask and of the plugin ABI's on-device sampling slot.
#include <cstdint>
#include <cstring>
#include <vector>

namespace gptoss::constrain {

class TokenMask {
 public:
  explicit TokenMask(size_t num_tokens = 0) : n_(num_tokens), words_((num_tokens + 31) / 32, 0) {}

  size_t num_tokens() const { return n_; }
  size_t num_words() const { return words_.size(); }
  const uint32_t* words() const { return words_.data(); }
  uint32_t* words() { return words_.data(); }

  void clear() { std::memset(words_.data(), 0, words_.size() * sizeof(uint32_t)); }
  void set(uint32_t t) { words_[t >> 5] |= 1u << (t & 31); }
  bool test(uint32_t t) const { return t < n_ && ((words_[t >> 5] >> (t & 31)) & 1u) != 0; }
  // this |= other (same size).
  void merge(const uint32_t* other) {
    for (size_t i = 0; i < words_.size(); ++i) words_[i] |= other[i];
  }
  size_t count() const {
    size_t n = 0;
    for (uint32_t w : words_) n += size_t(__builtin_popcount(w));
    return n;
  }

 private:
  size_t n_;
  std::vector<uint32_t> words_;
};

// A mask kept for scratch work by an object that is copied (a constraint's clone): copies
// start without one instead of copying 25 KB they would overwrite anyway.
class ScratchMask {
 public:
  ScratchMask() = default;
  ScratchMask(const ScratchMask&) {}
  ScratchMask& operator=(const ScratchMask&) { return *this; }
  TokenMask& get(size_t num_tokens) {
    if (mask_.num_tokens() != num_tokens) mask_ = TokenMask(num_tokens);
    return mask_;
  }

 private:
  TokenMask mask_;
};

}  // namespace gptoss::constrain
