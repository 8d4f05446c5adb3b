#pragma once
// Finished sequences' contexts, kept with their KV pages so that a later prompt that starts
// with the same tokens (the next turn of a conversation, an agent loop re-sending its
// history) skips their prefill. Least recently used first out; bounded by entries, and by
// the KV pool (the scheduler evicts when it needs pages). Scheduler thread only.
#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <vector>

#include <gptoss.hpp>

namespace gptoss_server {

class PrefixCache {
 public:
  struct Entry {
    gptoss::context context;
    std::vector<uint32_t> tokens;  // all processed
    size_t checkpoint = 0;         // end of the prompt that produced it
  };

  explicit PrefixCache(size_t max_entries) : max_entries_(max_entries) {}

  // The entry whose tokens share the longest prefix with `prompt`, taken out of the cache,
  // if that prefix is worth its entry: at least a page, and reaching the entry's checkpoint
  // or half its tokens (a new conversation that only shares the system prompt does not evict
  // a long one). *shared is the prefix length.
  std::optional<Entry> take(std::span<const uint32_t> prompt, size_t* shared);
  // Keeps `entry` as the most recent; releases the least recent beyond the bound.
  void put(Entry entry);
  // Releases the least recently used entry (its pages return to the pool); false if empty.
  bool evict_one();
  size_t size() const { return entries_.size(); }
  size_t max_entries() const { return max_entries_; }

 private:
  size_t max_entries_;
  std::list<Entry> entries_;  // most recent first
};

}  // namespace gptoss_server
