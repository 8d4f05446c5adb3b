#include "libgptoss/tokenizer/piece_cache.hpp"

namespace gptoss::tokenizer {

bool PieceCache::lookup(std::string_view piece, std::vector<uint32_t>& out) const {
  if (piece.size() > kMaxPieceBytes) return false;
  const size_t h = Hash{}(piece);
  Shard& shard = shard_of(h);
  std::lock_guard lock(shard.mutex);
  auto it = shard.map.find(piece);
  if (it == shard.map.end()) return false;
  out.insert(out.end(), it->second.begin(), it->second.end());
  return true;
}

void PieceCache::insert(std::string_view piece, const uint32_t* ids, size_t n) const {
  if (piece.size() > kMaxPieceBytes) return;
  Shard& shard = shard_of(Hash{}(piece));
  std::lock_guard lock(shard.mutex);
  if (shard.map.size() >= kEntriesPerShard) shard.map.clear();
  shard.map.try_emplace(std::string(piece), ids, ids + n);
}

}  // namespace gptoss::tokenizer
