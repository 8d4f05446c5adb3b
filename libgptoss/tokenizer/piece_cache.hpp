#pragma once
// Remembers the BPE result of pieces that are not single tokens, so that text with repeated
// words skips the merge loop. Shared by all threads using one Tokenizer: the table is split
// into shards with a mutex each, and a full shard is simply emptied (cheap, and recent pieces
// come back quickly).
#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gptoss::tokenizer {

class PieceCache {
 public:
  static constexpr size_t kMaxPieceBytes = 64;     // longer pieces are rare; not worth keeping
  static constexpr size_t kEntriesPerShard = 4096;  // 16 shards: 64 Ki pieces, a few MiB

  // Appends the cached ids of `piece` to `out`; false if not cached.
  bool lookup(std::string_view piece, std::vector<uint32_t>& out) const;
  void insert(std::string_view piece, const uint32_t* ids, size_t n) const;  // a cache: logically const

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Shard {
    mutable std::mutex mutex;
    std::unordered_map<std::string, std::vector<uint32_t>, Hash, std::equal_to<>> map;
  };
  static constexpr size_t kShards = 16;
  Shard& shard_of(size_t hash) const { return shards_[(hash >> 7) % kShards]; }

  mutable std::array<Shard, kShards> shards_;
};

}  // namespace gptoss::tokenizer
