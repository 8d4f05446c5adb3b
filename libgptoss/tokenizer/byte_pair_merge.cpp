#include "libgptoss/tokenizer/byte_pair_merge.hpp"

#include <algorithm>
#include <array>
#include <queue>

namespace gptoss::tokenizer {
namespace {

// Pieces up to this many bytes use tiktoken's quadratic scan over a stack array: it is the
// fastest for the short pieces the pre-split produces. Longer ones (runs of spaces, letters
// without breaks) use a heap so that a megabyte of 'a' does not take hours.
constexpr size_t kMaxShortPiece = 128;

void merge_short(const RankTable& ranks, std::string_view piece, std::vector<uint32_t>& out) {
  const size_t n = piece.size();
  const char* p = piece.data();
  // Part i spans [start[i], start[i + 1]); rank[i] is the rank of parts i and i+1 merged.
  std::array<uint32_t, kMaxShortPiece + 1> start;
  std::array<uint32_t, kMaxShortPiece + 1> rank;
  size_t parts = n;
  for (size_t i = 0; i < n; ++i) start[i] = static_cast<uint32_t>(i);
  start[n] = static_cast<uint32_t>(n);
  for (size_t i = 0; i + 1 < n; ++i) rank[i] = ranks.find(p + i, 2);
  rank[n - 1] = kNoRank;
  auto pair_rank = [&](size_t i) {  // parts i and i+1 merged, if both exist
    return i + 2 <= parts ? ranks.find(p + start[i], start[i + 2] - start[i]) : kNoRank;
  };
  while (parts > 1) {
    size_t best = 0;
    uint32_t best_rank = kNoRank;
    for (size_t i = 0; i + 1 < parts; ++i) {
      if (rank[i] < best_rank) {
        best_rank = rank[i];
        best = i;
      }
    }
    if (best_rank == kNoRank) break;
    // Merge parts best and best+1: drop start[best + 1].
    std::copy(start.begin() + best + 2, start.begin() + parts + 1, start.begin() + best + 1);
    std::copy(rank.begin() + best + 2, rank.begin() + parts, rank.begin() + best + 1);
    --parts;
    rank[best] = pair_rank(best);
    if (best > 0) rank[best - 1] = pair_rank(best - 1);
  }
  for (size_t i = 0; i < parts; ++i) out.push_back(ranks.find(p + start[i], start[i + 1] - start[i]));
}

void merge_long(const RankTable& ranks, std::string_view piece, std::vector<uint32_t>& out) {
  const size_t n = piece.size();
  const char* p = piece.data();
  // Doubly linked parts; part i (if alive) starts at byte i and ends where next[i] starts.
  std::vector<uint32_t> next(n), prev(n), rank(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    next[i] = static_cast<uint32_t>(i + 1);
    prev[i] = static_cast<uint32_t>(i - 1);  // wraps for i == 0; never read there
  }
  auto end_of = [&](uint32_t i) { return i < n ? next[i] : static_cast<uint32_t>(n); };
  auto pair_rank = [&](uint32_t i) -> uint32_t {
    const uint32_t j = next[i];
    if (j >= n) return kNoRank;
    return ranks.find(p + i, end_of(j) - i);
  };
  // Min-heap on (rank, start): the same choice as tiktoken's leftmost-lowest scan.
  using Entry = std::pair<uint32_t, uint32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  for (uint32_t i = 0; i < n; ++i) {
    rank[i] = pair_rank(i);
    if (rank[i] != kNoRank) heap.emplace(rank[i], i);
  }
  while (!heap.empty()) {
    auto [r, i] = heap.top();
    heap.pop();
    // A part's span only grows, so a stale entry has a different rank than the part now.
    if (!alive[i] || rank[i] != r) continue;
    const uint32_t j = next[i];
    alive[j] = false;
    next[i] = next[j];
    if (next[j] < n) prev[next[j]] = i;
    rank[i] = pair_rank(i);
    if (rank[i] != kNoRank) heap.emplace(rank[i], i);
    if (i > 0) {
      const uint32_t h = prev[i];
      rank[h] = pair_rank(h);
      if (rank[h] != kNoRank) heap.emplace(rank[h], h);
    }
  }
  for (uint32_t i = 0; i < n; i = next[i]) out.push_back(ranks.find(p + i, next[i] - i));
}

}  // namespace

void byte_pair_merge(const RankTable& ranks, std::string_view piece, std::vector<uint32_t>& out) {
  if (piece.empty()) return;
  if (piece.size() <= kMaxShortPiece) {
    merge_short(ranks, piece, out);
  } else {
    merge_long(ranks, piece, out);
  }
}

}  // namespace gptoss::tokenizer
