#pragma once
// Byte string -> rank (= token id) for the mergeable tokens, as one flat open-addressing table
// over the vocabulary's byte arena. BPE asks it for every candidate merge, so lookups avoid
// allocation and pointer chasing; one- and two-byte strings have direct tables.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

namespace gptoss::tokenizer {

inline constexpr uint32_t kNoRank = UINT32_MAX;

class RankTable {
 public:
  // Token `id` (< offsets.size() - 1) is arena[offsets[id], offsets[id + 1]). The arena and
  // offsets must outlive the table and stay where they are. Throws gptoss::Error
  // (invalid_argument) if two ids spell the same bytes or a token is empty.
  RankTable(std::string_view arena, std::span<const uint32_t> offsets);

  uint32_t find(const char* p, size_t n) const {
    if (n <= 2) return n == 1 ? byte_rank_[static_cast<unsigned char>(p[0])] : small_find(p, n);
    const uint64_t head = load_head(p, n);
    for (size_t i = hash(head, p, n) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id == kNoRank) return kNoRank;
      if (s.size == n && s.head == head &&
          (n <= 8 || std::memcmp(arena_ + offsets_[s.id] + 8, p + 8, n - 8) == 0)) {
        return s.id;
      }
    }
  }
  uint32_t find(std::string_view s) const { return find(s.data(), s.size()); }
  uint32_t byte_rank(unsigned char b) const { return byte_rank_[b]; }

 private:
  // A key's first bytes live in its slot, so most lookups (keys of at most 8 bytes) touch one
  // cache line; longer keys compare the rest against the arena.
  struct Slot {
    uint64_t head;  // load_head() of the key
    uint32_t size;  // key length in bytes
    uint32_t id;    // kNoRank = empty
  };
  uint32_t small_find(const char* p, size_t n) const {
    if (n == 0) return kNoRank;
    return pair_rank_[static_cast<unsigned char>(p[0]) << 8 | static_cast<unsigned char>(p[1])];
  }
  // For n >= 1: an injective function of the first min(n, 8) bytes, for a given n (overlapping
  // loads instead of a byte loop).
  static uint64_t load_head(const char* p, size_t n) {
    if (n >= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      return w;
    }
    if (n >= 4) {
      uint32_t lo, hi;
      std::memcpy(&lo, p, 4);
      std::memcpy(&hi, p + n - 4, 4);
      return lo | static_cast<uint64_t>(hi) << 32;
    }
    const auto b = [p](size_t i) { return static_cast<uint64_t>(static_cast<unsigned char>(p[i])); };
    return b(0) | b(n / 2) << 8 | b(n - 1) << 16;
  }
  static uint64_t hash(uint64_t head, const char* p, size_t n) {
    uint64_t h = (head ^ (n * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull;
    for (size_t i = 8; i < n; i += 8) {
      uint64_t w = 0;
      std::memcpy(&w, p + i, std::min<size_t>(8, n - i));
      h = (h ^ (h >> 31) ^ w) * 0x94D049BB133111EBull;
    }
    h ^= h >> 32;
    h *= 0xD6E8FEB86659FD93ull;
    h ^= h >> 29;
    return h;
  }

  const char* arena_;
  const uint32_t* offsets_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  std::vector<uint32_t> byte_rank_;  // 256
  std::vector<uint32_t> pair_rank_;  // 65536, indexed by first << 8 | second
};

}  // namespace gptoss::tokenizer
