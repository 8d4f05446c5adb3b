#pragma once
// Byte string -> rank (= token id) for the mergeable tokens, as one flat open-addressing table
// over the vocabulary's byte arena. BPE asks it for every candidate merge, so lookups avoid
// allocation and pointer chasing; one- and two-byte strings have direct tables.
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
    const uint64_t h = hash(p, n);
    const uint32_t tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot s = slots_[i];
      if (s.id == kNoRank) return kNoRank;
      if (s.tag == tag) {
        const uint32_t b = offsets_[s.id];
        if (offsets_[s.id + 1] - b == n && std::memcmp(arena_ + b, p, n) == 0) return s.id;
      }
    }
  }
  uint32_t find(std::string_view s) const { return find(s.data(), s.size()); }
  uint32_t byte_rank(unsigned char b) const { return byte_rank_[b]; }

 private:
  struct Slot {
    uint32_t id;
    uint32_t tag;  // high half of the hash, to skip most byte comparisons
  };
  uint32_t small_find(const char* p, size_t n) const {
    if (n == 0) return kNoRank;
    return pair_rank_[static_cast<unsigned char>(p[0]) << 8 | static_cast<unsigned char>(p[1])];
  }
  static uint64_t hash(const char* p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xFF51AFD7ED558CCDull);
    while (n >= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
      h ^= h >> 31;
      p += 8;
      n -= 8;
    }
    if (n > 0) {
      uint64_t w = 0;
      std::memcpy(&w, p, n);
      h = (h ^ w) * 0x94D049BB133111EBull;
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
