#include "libgptoss/tokenizer/byte_pair_merge.hpp"

#include <algorithm>
#include <array>

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
  for (size_t i = 0; i < parts; ++i)
    out.push_back(ranks.find(p + start[i], start[i + 1] - start[i]));
}

// A binary min-heap of parts keyed by (rank of merging with the next part, start), with each
// part's position tracked so that a changed rank moves the part instead of leaving a stale entry:
// the heap never holds more than one entry per part.
class PartHeap {
 public:
  explicit PartHeap(const std::vector<uint32_t>& rank) : rank_(rank), pos_(rank.size(), kAbsent) {}

  bool empty() const { return heap_.empty(); }
  uint32_t top() const { return heap_.front(); }
  // Call after rank[part] changed (or to add/remove it: kNoRank parts are kept out).
  void update(uint32_t part) {
    const bool present = pos_[part] != kAbsent;
    if (rank_[part] == kNoRank) {
      if (present) remove(part);
    } else if (!present) {
      pos_[part] = static_cast<uint32_t>(heap_.size());
      heap_.push_back(part);
      sift_up(pos_[part]);
    } else {
      sift_down(sift_up(pos_[part]));
    }
  }
  void remove(uint32_t part) {
    const uint32_t at = pos_[part];
    if (at == kAbsent) return;
    const uint32_t last = heap_.back();
    heap_.pop_back();
    pos_[part] = kAbsent;
    if (last != part) {
      heap_[at] = last;
      pos_[last] = at;
      sift_down(sift_up(at));
    }
  }

 private:
  static constexpr uint32_t kAbsent = UINT32_MAX;
  bool less(uint32_t a, uint32_t b) const {
    return rank_[a] != rank_[b] ? rank_[a] < rank_[b] : a < b;  // leftmost wins ties
  }
  void place(uint32_t at, uint32_t part) {
    heap_[at] = part;
    pos_[part] = at;
  }
  uint32_t sift_up(uint32_t at) {
    const uint32_t part = heap_[at];
    while (at > 0) {
      const uint32_t parent = (at - 1) / 2;
      if (!less(part, heap_[parent])) break;
      place(at, heap_[parent]);
      at = parent;
    }
    place(at, part);
    return at;
  }
  uint32_t sift_down(uint32_t at) {
    const uint32_t part = heap_[at];
    const size_t n = heap_.size();
    while (true) {
      size_t child = 2 * size_t{at} + 1;
      if (child >= n) break;
      if (child + 1 < n && less(heap_[child + 1], heap_[child])) ++child;
      if (!less(heap_[child], part)) break;
      place(at, heap_[child]);
      at = static_cast<uint32_t>(child);
    }
    place(at, part);
    return at;
  }

  const std::vector<uint32_t>& rank_;
  std::vector<uint32_t> pos_;
  std::vector<uint32_t> heap_;
};

void merge_long(const RankTable& ranks, std::string_view piece, std::vector<uint32_t>& out) {
  const uint32_t n = static_cast<uint32_t>(piece.size());
  const char* p = piece.data();
  // Doubly linked parts named by their start byte; part i spans [i, next[i]).
  std::vector<uint32_t> next(n), prev(n), rank(n, kNoRank);
  for (uint32_t i = 0; i < n; ++i) {
    next[i] = i + 1;
    prev[i] = i - 1;  // wraps for i == 0; never read there
  }
  auto pair_rank = [&](uint32_t i) -> uint32_t {
    const uint32_t j = next[i];
    if (j >= n) return kNoRank;
    return ranks.find(p + i, (next[j] < n ? next[j] : n) - i);
  };
  PartHeap heap(rank);
  for (uint32_t i = 0; i < n; ++i) {
    rank[i] = pair_rank(i);
    heap.update(i);
  }
  while (!heap.empty()) {
    const uint32_t i = heap.top();
    const uint32_t j = next[i];  // merged into i
    heap.remove(j);
    next[i] = next[j];
    if (next[j] < n) prev[next[j]] = i;
    rank[i] = pair_rank(i);
    heap.update(i);
    if (i > 0) {
      rank[prev[i]] = pair_rank(prev[i]);
      heap.update(prev[i]);
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
