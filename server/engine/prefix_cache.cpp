#include "engine/prefix_cache.hpp"

#include <algorithm>

namespace gptoss_server {
namespace {
constexpr size_t kMinShared = GPTOSS_KV_PAGE_SIZE;

size_t common_prefix(std::span<const uint32_t> a, const std::vector<uint32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  return size_t(std::mismatch(a.begin(), a.begin() + std::ptrdiff_t(n), b.begin()).first - a.begin());
}
}  // namespace

std::optional<PrefixCache::Entry> PrefixCache::take(std::span<const uint32_t> prompt, size_t* shared) {
  auto best = entries_.end();
  size_t best_len = 0;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const size_t len = common_prefix(prompt, it->tokens);
    const bool worth = len >= kMinShared && (len >= it->checkpoint || 2 * len >= it->tokens.size());
    if (worth && len > best_len) {
      best = it;
      best_len = len;
    }
  }
  if (best == entries_.end()) return std::nullopt;
  Entry e = std::move(*best);
  entries_.erase(best);
  *shared = best_len;
  return e;
}

void PrefixCache::put(Entry entry) {
  if (max_entries_ == 0) return;  // the context is released here
  entries_.push_front(std::move(entry));
  while (entries_.size() > max_entries_) entries_.pop_back();
}

bool PrefixCache::evict_one() {
  if (entries_.empty()) return false;
  entries_.pop_back();
  return true;
}

}  // namespace gptoss_server
