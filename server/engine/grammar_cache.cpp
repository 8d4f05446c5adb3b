#include "engine/grammar_cache.hpp"

namespace gptoss_server {

Grammar GrammarCache::harmony(const std::string& spec_json) {
  {
    std::lock_guard lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->first == spec_json) {
        entries_.splice(entries_.begin(), entries_, it);
        return it->second;
      }
  }
  // Compiled outside the lock: another request may compile the same spec meanwhile, which
  // costs time, never correctness.
  Grammar grammar(gptoss::grammar::harmony(tokenizer_, spec_json).release(),
                  [](gptoss_grammar* g) { gptoss_grammar_release(g); });
  std::lock_guard lock(mutex_);
  entries_.emplace_front(spec_json, grammar);
  while (entries_.size() > max_entries_) entries_.pop_back();
  return grammar;
}

}  // namespace gptoss_server
