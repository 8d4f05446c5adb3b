#include "libgptoss/constrain/matcher.hpp"

#include <algorithm>

#include "libgptoss/common/error.hpp"
#include "libgptoss/tokenizer/token_trie.hpp"

namespace gptoss::constrain {
namespace {
// Expansion steps one call may take: far beyond any real grammar, low enough that a hostile
// one fails in milliseconds.
constexpr size_t kMaxExpansionSteps = size_t(1) << 20;
}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  if (!grammar_) fail(gptoss_status_invalid_argument, "grammar must not be NULL");
  reset();
}

void Matcher::reset() {
  nodes_.clear();
  threads_.clear();
  live_nodes_after_gc_ = 0;
  for (uint32_t alt : grammar_->alternatives(grammar_->root())) expand(alt, kNil, threads_);
  dedup(threads_);
}

uint32_t Matcher::push_node(uint32_t pos, uint32_t parent) {
  const uint64_t below = parent == kNil ? 0 : nodes_[parent].hash;
  const uint64_t hash = (below ^ (uint64_t(pos) + 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull;
  const uint64_t after =
      parent == kNil ? 0 : Grammar::add_costs(grammar_->rest_cost(nodes_[parent].pos), nodes_[parent].after);
  nodes_.push_back({pos, parent, hash ^ (hash >> 31), after});
  return uint32_t(nodes_.size() - 1);
}

// Adds the threads that start at grammar position `pos` (the next symbol to match) with
// `parent` to continue with: rules are entered (a rule last in its alternative reuses the
// parent, so repetitions written as right recursion keep the stack flat), alternatives that
// end pop to the parent, and an empty grammar completion is the thread kNil.
void Matcher::expand(uint32_t pos, uint32_t parent, std::vector<Thread>& out) {
  const Grammar& g = *grammar_;
  size_t steps = 0;
  work_.clear();
  work_.push_back({pos, parent});
  while (!work_.empty()) {
    auto [p, par] = work_.back();
    work_.pop_back();
    for (bool more = true; more;) {
      if (++steps > kMaxExpansionSteps)
        fail(gptoss_status_insufficient_resources, "the grammar is too ambiguous to match (expansion limit)");
      const Symbol s = g.at(p);
      more = false;
      switch (s.kind) {
        case Symbol::Kind::end:
          if (par == kNil) {
            out.push_back({kNil, 0});
          } else {
            p = nodes_[par].pos;
            par = nodes_[par].parent;
            more = true;
          }
          break;
        case Symbol::Kind::lexeme: {
          const Dfa& d = g.lexeme(s.id);
          if (d.continues(d.start())) out.push_back({push_node(p, par), d.start()});
          if (d.accepting(d.start())) {
            ++p;
            more = true;
          }
          break;
        }
        case Symbol::Kind::special: out.push_back({push_node(p, par), kSpecialState}); break;
        case Symbol::Kind::rule: {
          const uint32_t cont = g.at(p + 1).kind == Symbol::Kind::end ? par : push_node(p + 1, par);
          for (uint32_t alt : g.alternatives(s.id)) work_.push_back({alt, cont});
          break;
        }
      }
    }
  }
}

void Matcher::step_byte(const std::vector<Thread>& in, uint8_t byte, std::vector<Thread>& out) {
  const Grammar& g = *grammar_;
  out.clear();
  for (const Thread t : in) {
    if (t.node == kNil || t.state == kSpecialState) continue;
    const Node n = nodes_[t.node];
    const Dfa& d = g.lexeme(g.at(n.pos).id);
    const int32_t next = d.step(t.state, byte);
    if (next == Dfa::kDead) continue;
    if (d.continues(next)) out.push_back({t.node, next});
    if (d.accepting(next)) expand(n.pos + 1, n.parent, out);
  }
  dedup(out);
}

void Matcher::step_special(const std::vector<Thread>& in, uint32_t token, std::vector<Thread>& out) {
  out.clear();
  for (const Thread t : in) {
    if (t.node == kNil || t.state != kSpecialState) continue;
    const Node n = nodes_[t.node];
    if (grammar_->at(n.pos).id == token) expand(n.pos + 1, n.parent, out);
  }
  dedup(out);
}

bool Matcher::same_stack(uint32_t a, uint32_t b) const {
  while (a != b) {
    if (a == kNil || b == kNil) return false;
    if (nodes_[a].pos != nodes_[b].pos || nodes_[a].hash != nodes_[b].hash) return false;
    a = nodes_[a].parent;
    b = nodes_[b].parent;
  }
  return true;
}

void Matcher::dedup(std::vector<Thread>& threads) const {
  if (threads.size() > 1) {
    auto key = [&](const Thread& t) {
      return std::make_pair(t.state, t.node == kNil ? uint64_t(0) : nodes_[t.node].hash);
    };
    std::sort(threads.begin(), threads.end(), [&](const Thread& a, const Thread& b) { return key(a) < key(b); });
    size_t kept = 0;
    for (size_t i = 0; i < threads.size(); ++i) {
      bool duplicate = false;
      for (size_t j = kept; j-- > 0 && key(threads[j]) == key(threads[i]);)
        if (same_stack(threads[j].node, threads[i].node)) duplicate = true;
      if (!duplicate) threads[kept++] = threads[i];
    }
    threads.resize(kept);
  }
  if (threads.size() > kMaxThreads)
    fail(gptoss_status_insufficient_resources, "the grammar is too ambiguous to match (more than {} threads)",
         kMaxThreads);
}

bool Matcher::commit(std::vector<Thread>& next, size_t mark) {
  if (next.empty()) {
    nodes_.resize(mark);
    return false;
  }
  threads_.swap(next);
  collect_garbage();
  return true;
}

size_t Matcher::step_token(uint32_t token) {
  const size_t mark = nodes_.size();
  const Vocabulary& v = grammar_->vocab();
  a_.clear();
  if (token >= v.num_tokens()) return mark;
  if (v.is_special(token)) {
    step_special(threads_, token, a_);
    return mark;
  }
  const std::string_view bytes = v.text_bytes(token);
  if (!bytes.empty()) step_bytes(bytes);
  return mark;
}

void Matcher::step_bytes(std::string_view bytes) {
  a_ = threads_;
  for (char c : bytes) {
    step_byte(a_, static_cast<uint8_t>(c), b_);
    a_.swap(b_);
    if (a_.empty()) break;
  }
}

bool Matcher::accept_token(uint32_t token) {
  const size_t mark = step_token(token);
  return commit(a_, mark);
}

bool Matcher::allows_token(uint32_t token) {
  const size_t mark = step_token(token);
  const bool ok = !a_.empty();
  nodes_.resize(mark);
  return ok;
}

bool Matcher::accept_bytes(std::string_view bytes) {
  const size_t mark = nodes_.size();
  step_bytes(bytes);
  return commit(a_, mark);
}

void Matcher::check_exit(const LexemeTokens::Exit& exit, TokenMask& mask, uint64_t limit) {
  const Vocabulary& v = grammar_->vocab();
  const tokenizer::TokenTrie& trie = v.trie();
  const size_t root = exit.node, end = trie.skip(root), depth = trie.depth(root);
  // The path to the node: the first bytes of any token below it.
  size_t leaf = root;
  while (trie.tokens_at(leaf).first == trie.tokens_at(leaf).second) ++leaf;
  const std::string_view path = v.text_bytes(*trie.tokens_at(leaf).first).substr(0, depth);
  // levels_[k]: threads after the rest's first k bytes (the rest begins at byte exit.offset).
  const size_t base = exit.offset;
  if (levels_.size() < trie.max_depth() + 1) {
    levels_.resize(trie.max_depth() + 1);
    marks_.resize(trie.max_depth() + 1);
  }
  levels_[0] = continuation_;
  marks_[0] = nodes_.size();
  for (size_t k = 0; k + base < depth; ++k) {
    step_byte(levels_[k], static_cast<uint8_t>(path[base + k]), levels_[k + 1]);
    marks_[k + 1] = nodes_.size();
    if (levels_[k + 1].empty()) return;  // the whole subtree is rejected
  }
  for (size_t node = root; node < end;) {
    const size_t k = trie.depth(node) - base;  // levels_[k] is this node's
    if (node != root) {
      nodes_.resize(marks_[k - 1]);
      step_byte(levels_[k - 1], trie.byte(node), levels_[k]);
      marks_[k] = nodes_.size();
      if (levels_[k].empty()) {
        node = trie.skip(node);
        continue;
      }
    }
    auto [t, stop] = trie.tokens_at(node);
    if (t != stop && (limit == kNoLimit || min_cost(levels_[k]) <= limit))
      for (; t != stop; ++t) mask.set(*t);
    else held_back_ = held_back_ || t != stop;
    ++node;
  }
}

void Matcher::fill_mask(TokenMask& mask) { fill_mask(mask, kNoLimit); }

uint64_t Matcher::thread_cost(const Thread& t) const {
  if (t.node == kNil) return 0;
  const Grammar& g = *grammar_;
  const Node& n = nodes_[t.node];
  const uint64_t here = t.state == kSpecialState ? 1 : g.bytes_to_accept(g.at(n.pos).id, t.state);
  return Grammar::add_costs(Grammar::add_costs(here, g.rest_cost(n.pos + 1)), n.after);
}

uint64_t Matcher::min_cost(const std::vector<Thread>& threads) const {
  uint64_t best = Grammar::kNoCompletion;
  for (const Thread& t : threads) best = std::min(best, thread_cost(t));
  return best;
}

uint64_t Matcher::cost() const { return min_cost(threads_); }

// The walk of LexemeTokens::compute, keeping the tokens that end close enough to acceptance.
void Matcher::set_inside_within(uint32_t lexeme, int32_t state, uint64_t max_to_accept, TokenMask& mask) {
  const Grammar& g = *grammar_;
  const Dfa& d = g.lexeme(lexeme);
  const tokenizer::TokenTrie& trie = g.vocab().trie();
  std::vector<int32_t> states(trie.max_depth() + 1);
  states[0] = state;
  for (size_t i = 0, n = trie.num_nodes(); i < n;) {
    const uint32_t depth = trie.depth(i);
    const int32_t next = d.step(states[depth - 1], trie.byte(i));
    if (next == Dfa::kDead) {
      i = trie.skip(i);
      continue;
    }
    states[depth] = next;
    auto [t, end] = trie.tokens_at(i);
    if (g.bytes_to_accept(lexeme, next) <= max_to_accept)
      for (; t != end; ++t) mask.set(*t);
    else held_back_ = held_back_ || t != end;
    ++i;
  }
}

// With a limit, a token is kept when some thread leads through it to a completion within the
// limit: a special token by the cost of what follows it; a token inside a lexeme by the DFA
// state it ends in (all of them at once when even the farthest state is close enough); a
// token that leaves the lexeme by the threads its rest leads to, checked on the trie walk.
bool Matcher::fill_mask(TokenMask& mask, uint64_t limit) {
  const Grammar& g = *grammar_;
  mask.clear();
  held_back_ = false;
  for (size_t i = 0; i < threads_.size(); ++i) {
    const Thread t = threads_[i];
    if (t.node == kNil) continue;
    const Node n = nodes_[t.node];
    const Symbol s = g.at(n.pos);
    const uint64_t beyond = Grammar::add_costs(g.rest_cost(n.pos + 1), n.after);
    if (t.state == kSpecialState) {
      if (limit == kNoLimit || beyond <= limit) mask.set(s.id);
      else held_back_ = true;
      continue;
    }
    const auto tokens = g.tokens(s.id, t.state);
    if (limit == kNoLimit || Grammar::add_costs(g.most_bytes_to_accept(s.id), beyond) <= limit)
      tokens->merge_inside_into(mask);
    else if (beyond <= limit)
      set_inside_within(s.id, t.state, limit - beyond, mask);
    else
      held_back_ = held_back_ || tokens->num_inside() > 0;
    if (tokens->exits.empty()) continue;
    // Tokens that leave the lexeme and go on: their rest must suit what follows it.
    const size_t mark = nodes_.size();
    continuation_.clear();
    expand(n.pos + 1, n.parent, continuation_);
    dedup(continuation_);
    for (const LexemeTokens::Exit& e : tokens->exits) check_exit(e, mask, limit);
    nodes_.resize(mark);
  }
  return held_back_;
}

uint64_t Matcher::cost_after(uint32_t token) {
  const size_t mark = step_token(token);
  const uint64_t cost = a_.empty() ? Grammar::kNoCompletion : min_cost(a_);
  nodes_.resize(mark);
  return cost;
}

bool Matcher::finished() const {
  for (const Thread& t : threads_)
    if (t.node != kNil) return false;
  return !threads_.empty();
}

// Nodes of rejected or finished paths stay in the arena; when it has grown well past what the
// threads still reach, the reachable nodes are copied down (parents always precede children).
void Matcher::collect_garbage() {
  if (nodes_.size() < 8192 || nodes_.size() < 4 * live_nodes_after_gc_) return;
  std::vector<uint32_t> remap(nodes_.size(), kNil);
  std::vector<uint8_t> live(nodes_.size(), 0);
  for (const Thread& t : threads_)
    for (uint32_t n = t.node; n != kNil && !live[n]; n = nodes_[n].parent) live[n] = 1;
  std::vector<Node> kept;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (live[i]) {
      remap[i] = uint32_t(kept.size());
      Node n = nodes_[i];
      if (n.parent != kNil) n.parent = remap[n.parent];
      kept.push_back(n);
    }
  nodes_.swap(kept);
  for (Thread& t : threads_)
    if (t.node != kNil) t.node = remap[t.node];
  live_nodes_after_gc_ = nodes_.size();
}

}  // namespace gptoss::constrain
