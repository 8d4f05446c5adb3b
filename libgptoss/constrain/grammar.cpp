#include "libgptoss/constrain/grammar.hpp"

#include <functional>
#include <queue>

namespace gptoss::constrain {

Grammar::Grammar(std::shared_ptr<const Vocabulary> vocab, std::vector<Dfa> lexemes, std::vector<Symbol> symbols,
                 std::vector<std::vector<uint32_t>> alternatives, uint32_t root)
    : vocab_(std::move(vocab)),
      lexemes_(std::move(lexemes)),
      symbols_(std::move(symbols)),
      alternatives_(std::move(alternatives)),
      root_(root) {
  size_t slots = 0;
  for (const Dfa& d : lexemes_) {
    first_slot_.push_back(slots);
    slots += d.num_states();
  }
  cache_.resize(slots);
  compute_costs();
}

// Rule costs by Knuth's generalization of Dijkstra's algorithm (an alternative's cost is the
// sum of its symbols' costs, all non-negative): a rule's cost is final when it is the cheapest
// of those pending, so recursion costs one pass and no fixed-point iteration.
void Grammar::compute_costs() {
  for (const Dfa& d : lexemes_) {
    std::vector<uint32_t> dist = d.distances_to_accept();
    most_to_accept_.push_back(dist.empty() ? 0 : *std::max_element(dist.begin(), dist.end()));
    to_accept_.insert(to_accept_.end(), dist.begin(), dist.end());
  }
  auto terminal_cost = [&](const Symbol& s) -> uint64_t {
    if (s.kind == Symbol::Kind::special) return 1;
    const Dfa& d = lexemes_[s.id];
    return d.start() == Dfa::kDead ? kNoCompletion : bytes_to_accept(s.id, d.start());
  };
  struct Alternative {
    uint32_t rule;
    uint64_t cost = 0;
    uint32_t pending = 0;  // rule symbols whose cost is not final yet
  };
  std::vector<Alternative> alts;
  std::vector<std::vector<uint32_t>> uses(alternatives_.size());  // rule -> alternatives using it
  using Candidate = std::pair<uint64_t, uint32_t>;                 // (cost, rule)
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  for (uint32_t r = 0; r < alternatives_.size(); ++r)
    for (uint32_t start : alternatives_[r]) {
      Alternative a{r};
      for (uint32_t p = start; symbols_[p].kind != Symbol::Kind::end; ++p) {
        if (symbols_[p].kind == Symbol::Kind::rule) {
          ++a.pending;
          uses[symbols_[p].id].push_back(uint32_t(alts.size()));
        } else {
          a.cost = add_costs(a.cost, terminal_cost(symbols_[p]));
        }
      }
      if (a.pending == 0) queue.push({a.cost, r});
      alts.push_back(a);
    }
  rule_cost_.assign(alternatives_.size(), kNoCompletion);
  std::vector<uint8_t> done(alternatives_.size(), 0);
  while (!queue.empty()) {
    const auto [cost, r] = queue.top();
    queue.pop();
    if (done[r] || cost >= kNoCompletion) continue;
    done[r] = 1;
    rule_cost_[r] = cost;
    for (uint32_t i : uses[r]) {
      alts[i].cost = add_costs(alts[i].cost, cost);
      if (--alts[i].pending == 0) queue.push({alts[i].cost, alts[i].rule});
    }
  }
  rest_cost_.assign(symbols_.size(), 0);
  for (uint32_t p = uint32_t(symbols_.size()); p-- > 0;) {
    const Symbol& s = symbols_[p];
    if (s.kind == Symbol::Kind::end) continue;  // 0: the alternative ends here
    const uint64_t own = s.kind == Symbol::Kind::rule ? rule_cost_[s.id] : terminal_cost(s);
    rest_cost_[p] = add_costs(own, rest_cost_[p + 1]);
  }
}

std::shared_ptr<const LexemeTokens> Grammar::tokens(uint32_t lexeme, int32_t state) const {
  const size_t slot = first_slot_[lexeme] + size_t(state);
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_[slot]) return cache_[slot];
  }
  // Computed outside the lock: another thread may compute the same set meanwhile (the first
  // one stored wins; both are equal).
  auto computed = std::make_shared<const LexemeTokens>(
      LexemeTokens::compute(lexemes_[lexeme], state, *vocab_));
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_[slot]) return cache_[slot];
  if (cache_bytes_ + computed->memory_bytes() > kMaxCacheBytes) return computed;
  cache_bytes_ += computed->memory_bytes();
  cache_[slot] = computed;
  return computed;
}

size_t Grammar::memory_bytes() const {
  size_t n = symbols_.size() * sizeof(Symbol) + cache_.size() * sizeof(cache_[0]);
  for (const Dfa& d : lexemes_) n += d.memory_bytes();
  for (const auto& a : alternatives_) n += a.size() * sizeof(uint32_t);
  return n;
}

}  // namespace gptoss::constrain
