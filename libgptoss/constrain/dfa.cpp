#include "libgptoss/constrain/dfa.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "libgptoss/common/error.hpp"

namespace gptoss::constrain {
namespace {

// Minimization is quadratic at worst; larger automata (huge enums) stay as built.
constexpr size_t kMaxMinimizedStates = 20000;

// Thompson's construction, epsilon edges kept (the subset construction closes over them).
class Nfa {
 public:
  explicit Nfa(size_t max_states) : max_states_(max_states) {}

  uint32_t add_state() {
    if (eps_.size() >= max_states_)
      fail(gptoss_status_unsupported_argument,
           "a lexeme of the grammar needs more than {} automaton states", max_states_);
    eps_.emplace_back();
    edges_.emplace_back();
    return uint32_t(eps_.size() - 1);
  }

  // Adds paths from `from` to `to` spelling `r`. Parts never add edges into `from` or out of
  // `to`, so alternatives may share both ends.
  void build(const RegexNode& r, uint32_t from, uint32_t to) {
    switch (r.kind) {
      case RegexNode::Kind::bytes: edges_[from].push_back({set_id(r.set), to}); break;
      case RegexNode::Kind::concat: {
        if (r.parts.empty()) {
          eps_[from].push_back(to);
          break;
        }
        uint32_t cur = from;
        for (size_t i = 0; i + 1 < r.parts.size(); ++i) {
          uint32_t mid = add_state();
          build(*r.parts[i], cur, mid);
          cur = mid;
        }
        build(*r.parts.back(), cur, to);
        break;
      }
      case RegexNode::Kind::alt:
        for (const auto& p : r.parts) build(*p, from, to);
        break;
      case RegexNode::Kind::repeat: {
        const RegexNode& body = *r.parts[0];
        uint32_t cur = from;
        for (uint32_t i = 0; i < r.min; ++i) {
          uint32_t next = add_state();
          build(body, cur, next);
          cur = next;
        }
        if (r.max == RegexNode::kUnbounded) {
          uint32_t loop = add_state();
          eps_[cur].push_back(loop);
          build(body, loop, loop);
          eps_[loop].push_back(to);
          break;
        }
        for (uint32_t i = r.min; i < r.max; ++i) {
          eps_[cur].push_back(to);
          uint32_t next = add_state();
          build(body, cur, next);
          cur = next;
        }
        eps_[cur].push_back(to);
        break;
      }
    }
  }

  struct Edge {
    uint32_t set, to;
  };
  const std::vector<std::vector<uint32_t>>& eps() const { return eps_; }
  const std::vector<std::vector<Edge>>& edges() const { return edges_; }
  const std::vector<std::bitset<256>>& sets() const { return sets_; }

 private:
  uint32_t set_id(const std::bitset<256>& s) {
    auto [it, added] = set_ids_.emplace(s, uint32_t(sets_.size()));
    if (added) sets_.push_back(s);
    return it->second;
  }

  size_t max_states_;
  std::vector<std::vector<uint32_t>> eps_;
  std::vector<std::vector<Edge>> edges_;
  std::vector<std::bitset<256>> sets_;
  std::unordered_map<std::bitset<256>, uint32_t> set_ids_;
};

// Partition of the 256 bytes so that every set is a union of classes.
uint32_t byte_classes(const std::vector<std::bitset<256>>& sets, std::array<uint8_t, 256>& cls) {
  std::array<uint32_t, 256> c{};
  uint32_t n = 1;
  for (const auto& s : sets) {
    std::map<std::pair<uint32_t, bool>, uint32_t> renumber;
    for (unsigned b = 0; b < 256; ++b) {
      auto [it, added] = renumber.emplace(std::make_pair(c[b], s.test(b)), uint32_t(renumber.size()));
      c[b] = it->second;
    }
    n = uint32_t(renumber.size());
  }
  for (unsigned b = 0; b < 256; ++b) cls[b] = uint8_t(c[b]);
  return n;
}

void close_over_eps(const Nfa& nfa, std::vector<uint32_t>& set, std::vector<uint8_t>& seen) {
  std::vector<uint32_t> stack(set.begin(), set.end());
  for (uint32_t s : set) seen[s] = 1;
  while (!stack.empty()) {
    uint32_t s = stack.back();
    stack.pop_back();
    for (uint32_t t : nfa.eps()[s])
      if (!seen[t]) {
        seen[t] = 1;
        set.push_back(t);
        stack.push_back(t);
      }
  }
  for (uint32_t s : set) seen[s] = 0;
  std::sort(set.begin(), set.end());
}

}  // namespace

Dfa Dfa::compile(const Regex& regex, size_t max_states) {
  Nfa nfa(max_states * 8);
  const uint32_t first = nfa.add_state(), final = nfa.add_state();
  nfa.build(*regex, first, final);

  Dfa d;
  d.n_classes_ = byte_classes(nfa.sets(), d.byte_class_);
  // Classes each distinct set covers (sets are unions of classes).
  std::vector<std::vector<uint32_t>> set_classes(nfa.sets().size());
  std::vector<uint8_t> class_seen(d.n_classes_);
  for (size_t i = 0; i < nfa.sets().size(); ++i) {
    std::fill(class_seen.begin(), class_seen.end(), 0);
    for (unsigned b = 0; b < 256; ++b)
      if (nfa.sets()[i].test(b) && !class_seen[d.byte_class_[b]]) {
        class_seen[d.byte_class_[b]] = 1;
        set_classes[i].push_back(d.byte_class_[b]);
      }
  }

  std::vector<uint8_t> seen(nfa.eps().size());
  std::map<std::vector<uint32_t>, int32_t> ids;
  std::vector<std::vector<uint32_t>> states;
  auto intern = [&](std::vector<uint32_t> set) {
    close_over_eps(nfa, set, seen);
    auto [it, added] = ids.emplace(set, int32_t(states.size()));
    if (added) {
      if (states.size() >= max_states)
        fail(gptoss_status_unsupported_argument,
             "a lexeme of the grammar needs more than {} automaton states", max_states);
      states.push_back(std::move(set));
    }
    return it->second;
  };
  intern({first});
  std::vector<int32_t> next;
  std::vector<std::vector<uint32_t>> targets(d.n_classes_);
  for (size_t i = 0; i < states.size(); ++i) {
    for (auto& t : targets) t.clear();
    for (uint32_t q : states[i])
      for (const auto& e : nfa.edges()[q])
        for (uint32_t c : set_classes[e.set]) targets[c].push_back(e.to);
    for (uint32_t c = 0; c < d.n_classes_; ++c) {
      auto& t = targets[c];
      std::sort(t.begin(), t.end());
      t.erase(std::unique(t.begin(), t.end()), t.end());
      int32_t to = t.empty() ? kDead : intern(t);
      next.push_back(to);
    }
  }

  // Keep only states from which an accepting state is reachable.
  const size_t n = states.size(), k = d.n_classes_;
  std::vector<std::vector<uint32_t>> reverse(n);
  std::vector<uint8_t> live(n, 0);
  std::vector<uint32_t> work;
  for (size_t s = 0; s < n; ++s) {
    for (size_t c = 0; c < k; ++c)
      if (next[s * k + c] != kDead) reverse[size_t(next[s * k + c])].push_back(uint32_t(s));
    if (std::binary_search(states[s].begin(), states[s].end(), final)) {
      live[s] = 1;
      work.push_back(uint32_t(s));
    }
  }
  while (!work.empty()) {
    uint32_t s = work.back();
    work.pop_back();
    for (uint32_t p : reverse[s])
      if (!live[p]) {
        live[p] = 1;
        work.push_back(p);
      }
  }
  std::vector<int32_t> remap(n, kDead);
  int32_t kept = 0;
  for (size_t s = 0; s < n; ++s)
    if (live[s]) remap[s] = kept++;
  d.start_ = remap[0];
  d.next_.assign(size_t(kept) * k, kDead);
  d.accepting_.assign(size_t(kept), 0);
  d.continues_.assign(size_t(kept), 0);
  for (size_t s = 0; s < n; ++s) {
    if (!live[s]) continue;
    const size_t r = size_t(remap[s]);
    d.accepting_[r] = std::binary_search(states[s].begin(), states[s].end(), final);
    for (size_t c = 0; c < k; ++c) {
      const int32_t t = next[s * k + c];
      if (t != kDead && live[size_t(t)]) {
        d.next_[r * k + c] = remap[size_t(t)];
        d.continues_[r] = 1;
      }
    }
  }
  if (d.num_states() <= kMaxMinimizedStates) d.minimize();
  return d;
}

// Moore's partition refinement: states split by accepting, then by the blocks their
// transitions lead to, until no block splits.
void Dfa::minimize() {
  const size_t n = num_states(), k = n_classes_;
  if (n == 0) return;
  std::vector<int32_t> block(n);
  for (size_t s = 0; s < n; ++s) block[s] = accepting_[s];
  size_t blocks = 0;
  for (;;) {
    std::map<std::vector<int32_t>, int32_t> ids;
    std::vector<int32_t> next_block(n);
    std::vector<int32_t> signature(k + 1);
    for (size_t s = 0; s < n; ++s) {
      signature[0] = block[s];
      for (size_t c = 0; c < k; ++c) {
        const int32_t t = next_[s * k + c];
        signature[c + 1] = t == kDead ? -1 : block[size_t(t)];
      }
      next_block[s] = ids.emplace(signature, int32_t(ids.size())).first->second;
    }
    block.swap(next_block);
    if (ids.size() == blocks) break;
    blocks = ids.size();
  }
  std::vector<int32_t> next(blocks * k, kDead);
  std::vector<uint8_t> accepting(blocks), continues(blocks);
  for (size_t s = 0; s < n; ++s) {
    const size_t b = size_t(block[s]);
    accepting[b] = accepting_[s];
    continues[b] = continues_[s];
    for (size_t c = 0; c < k; ++c) {
      const int32_t t = next_[s * k + c];
      next[b * k + c] = t == kDead ? kDead : block[size_t(t)];
    }
  }
  start_ = block[size_t(start_)];
  next_.swap(next);
  accepting_.swap(accepting);
  continues_.swap(continues);
}

std::vector<uint32_t> Dfa::distances_to_accept() const {
  const size_t n = num_states();
  std::vector<std::vector<int32_t>> into(n);
  for (size_t s = 0; s < n; ++s)
    for (size_t c = 0; c < n_classes_; ++c)
      if (const int32_t t = next_[s * n_classes_ + c]; t != kDead) into[size_t(t)].push_back(int32_t(s));
  constexpr uint32_t kUnseen = UINT32_MAX;
  std::vector<uint32_t> dist(n, kUnseen);
  std::vector<int32_t> queue;
  for (size_t s = 0; s < n; ++s)
    if (accepting_[s]) {
      dist[s] = 0;
      queue.push_back(int32_t(s));
    }
  for (size_t head = 0; head < queue.size(); ++head)
    for (int32_t from : into[size_t(queue[head])])
      if (dist[size_t(from)] == kUnseen) {
        dist[size_t(from)] = dist[size_t(queue[head])] + 1;
        queue.push_back(from);
      }
  return dist;
}

bool Dfa::operator==(const Dfa& o) const {
  return start_ == o.start_ && n_classes_ == o.n_classes_ && byte_class_ == o.byte_class_ &&
         next_ == o.next_ && accepting_ == o.accepting_;
}

uint64_t Dfa::hash() const {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(uint64_t(start_) + 7);
  mix(n_classes_);
  for (uint8_t c : byte_class_) mix(c);
  for (int32_t t : next_) mix(uint64_t(uint32_t(t)));
  for (uint8_t a : accepting_) mix(a);
  return h;
}

}  // namespace gptoss::constrain
