#include "libgptoss/constrain/grammar_builder.hpp"

#include <unordered_map>

#include "libgptoss/common/error.hpp"
#include "libgptoss/constrain/matcher.hpp"

namespace gptoss::constrain {
namespace {
constexpr uint32_t kNone = 0xffffffffu;

// A node on a cycle reachable from `start` in `edges`, or kNone (iterative depth-first search;
// `color`: 0 unseen, 1 on the current path, 2 done; shared across calls).
uint32_t find_cycle(const std::vector<std::vector<uint32_t>>& edges, uint32_t start, std::vector<uint8_t>& color) {
  if (color[start]) return kNone;
  std::vector<std::pair<uint32_t, size_t>> stack{{start, 0}};
  color[start] = 1;
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next >= edges[node].size()) {
      color[node] = 2;
      stack.pop_back();
      continue;
    }
    const uint32_t to = edges[node][next++];
    if (color[to] == 1) return to;
    if (color[to] == 0) {
      color[to] = 1;
      stack.push_back({to, 0});
    }
  }
  return kNone;
}
}  // namespace

GrammarBuilder::GrammarBuilder(std::shared_ptr<const Vocabulary> vocab, GrammarLimits limits)
    : vocab_(std::move(vocab)), limits_(limits) {}

Symbol GrammarBuilder::lexeme(Regex regex, std::string where) {
  lexemes_.push_back({std::move(regex), false, std::move(where)});
  return {Symbol::Kind::lexeme, uint32_t(lexemes_.size() - 1)};
}

Symbol GrammarBuilder::shared_lexeme(Regex regex) {
  lexemes_.push_back({std::move(regex), true, {}});
  return {Symbol::Kind::lexeme, uint32_t(lexemes_.size() - 1)};
}

uint32_t GrammarBuilder::add_rule(std::string where) {
  rules_.emplace_back();
  where_.push_back(std::move(where));
  return uint32_t(rules_.size() - 1);
}

void GrammarBuilder::add_alternative(uint32_t rule, std::vector<Symbol> symbols) {
  num_symbols_ += symbols.size() + 1;
  if (num_symbols_ > limits_.max_symbols)
    fail(gptoss_status_unsupported_argument, "{}: the grammar would have more than {} symbols", where_[rule],
         limits_.max_symbols);
  rules_[rule].push_back(std::move(symbols));
}

uint32_t GrammarBuilder::rule_of(std::string where, std::vector<std::vector<Symbol>> alternatives) {
  const uint32_t r = add_rule(std::move(where));
  for (auto& a : alternatives) add_alternative(r, std::move(a));
  return r;
}

void GrammarBuilder::merge_lexemes() {
  for (auto& rule : rules_)
    for (auto& alt : rule) {
      std::vector<Symbol> out;
      std::vector<Regex> run;
      std::string run_where;
      size_t run_start = 0;
      auto flush = [&] {
        if (run.size() == 1) out.push_back(alt[run_start]);
        else if (!run.empty()) out.push_back(lexeme(re_concat(std::move(run)), run_where));
        run.clear();
        run_where.clear();
      };
      for (size_t i = 0; i < alt.size(); ++i) {
        const Symbol s = alt[i];
        if (s.kind == Symbol::Kind::lexeme && !lexemes_[s.id].shared) {
          if (run.empty()) run_start = i;
          run.push_back(lexemes_[s.id].regex);
          if (run_where.empty()) run_where = lexemes_[s.id].where;
        } else {
          flush();
          out.push_back(s);
        }
      }
      flush();
      alt = std::move(out);
    }
}

std::vector<Dfa> GrammarBuilder::compile_lexemes(std::vector<uint32_t>& lexeme_index) {
  std::vector<Dfa> dfas;
  std::unordered_map<const RegexNode*, uint32_t> by_regex;
  std::unordered_multimap<uint64_t, uint32_t> by_hash;
  size_t bytes = num_symbols_ * sizeof(Symbol);
  lexeme_index.assign(lexemes_.size(), kNone);
  for (size_t r = 0; r < rules_.size(); ++r)
    for (auto& alt : rules_[r])
      for (Symbol& s : alt) {
        if (s.kind != Symbol::Kind::lexeme || lexeme_index[s.id] != kNone) continue;
        const RegexNode* key = lexemes_[s.id].regex.get();
        if (auto it = by_regex.find(key); it != by_regex.end()) {
          lexeme_index[s.id] = it->second;
          continue;
        }
        Dfa dfa;
        try {
          dfa = Dfa::compile(lexemes_[s.id].regex, limits_.max_lexeme_states);
        } catch (const Error& e) {
          const std::string& where = lexemes_[s.id].where.empty() ? where_[r] : lexemes_[s.id].where;
          throw Error(e.status(), where + ": " + e.what());
        }
        const uint64_t h = dfa.hash();
        uint32_t id = kNone;
        for (auto [it, end] = by_hash.equal_range(h); it != end; ++it)
          if (dfas[it->second] == dfa) id = it->second;
        if (id == kNone) {
          bytes += dfa.memory_bytes();
          if (bytes > limits_.max_bytes)
            fail(gptoss_status_unsupported_argument, "the compiled grammar would exceed {} MiB",
                 limits_.max_bytes >> 20);
          id = uint32_t(dfas.size());
          dfas.push_back(std::move(dfa));
          by_hash.emplace(h, id);
        }
        by_regex.emplace(key, id);
        lexeme_index[s.id] = id;
      }
  return dfas;
}

// Removes alternatives that can never complete (an empty lexeme, or a rule that cannot
// derive any finite text), so that every position the matcher can reach can be completed.
void GrammarBuilder::drop_dead_alternatives(const std::vector<Dfa>& dfas, const std::vector<uint32_t>& lexeme_index,
                                            uint32_t root) {
  for (auto& rule : rules_)
    std::erase_if(rule, [&](const std::vector<Symbol>& alt) {
      for (const Symbol& s : alt)
        if (s.kind == Symbol::Kind::lexeme && dfas[lexeme_index[s.id]].start() == Dfa::kDead) return true;
      return false;
    });
  // Productive rules, by a worklist over "unproductive rule symbols left" per alternative.
  const size_t n = rules_.size();
  std::vector<uint8_t> productive(n, 0);
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> used_in(n);  // rule -> (rule, alt)
  std::vector<std::vector<uint32_t>> pending(n);
  std::vector<uint32_t> work;
  for (uint32_t r = 0; r < n; ++r) {
    pending[r].resize(rules_[r].size());
    for (uint32_t a = 0; a < rules_[r].size(); ++a) {
      for (const Symbol& s : rules_[r][a])
        if (s.kind == Symbol::Kind::rule) {
          ++pending[r][a];
          used_in[s.id].push_back({r, a});
        }
      if (pending[r][a] == 0 && !productive[r]) {
        productive[r] = 1;
        work.push_back(r);
      }
    }
  }
  while (!work.empty()) {
    const uint32_t s = work.back();
    work.pop_back();
    for (auto [r, a] : used_in[s])
      if (--pending[r][a] == 0 && !productive[r]) {
        productive[r] = 1;
        work.push_back(r);
      }
  }
  if (!productive[root]) {
    // Name a rule that needs itself (recursion without a base case), if there is one.
    std::vector<std::vector<uint32_t>> needs(n);
    for (uint32_t r = 0; r < n; ++r)
      for (const auto& alt : rules_[r])
        for (const Symbol& s : alt)
          if (s.kind == Symbol::Kind::rule && !productive[s.id]) needs[r].push_back(s.id);
    std::vector<uint8_t> color(n, 0);
    if (const uint32_t c = find_cycle(needs, root, color); c != kNone)
      fail(gptoss_status_invalid_argument, "{}: recursion without a base case (no finite value exists)", where_[c]);
    fail(gptoss_status_invalid_argument, "{}: no value can satisfy it", where_[root]);
  }
  for (auto& rule : rules_)
    std::erase_if(rule, [&](const std::vector<Symbol>& alt) {
      for (const Symbol& s : alt)
        if (s.kind == Symbol::Kind::rule && !productive[s.id]) return true;
      return false;
    });
}

// A rule reachable from itself before any input is consumed would expand forever.
void GrammarBuilder::check_left_recursion(const std::vector<Dfa>& dfas, const std::vector<uint32_t>& lexeme_index) {
  const size_t n = rules_.size();
  auto symbol_nullable = [&](const Symbol& s, const std::vector<uint8_t>& nullable) {
    switch (s.kind) {
      case Symbol::Kind::lexeme: {
        const Dfa& d = dfas[lexeme_index[s.id]];
        return d.accepting(d.start());
      }
      case Symbol::Kind::rule: return nullable[s.id] != 0;
      default: return false;
    }
  };
  std::vector<uint8_t> nullable(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const auto& alt : rules_[r]) {
        bool all = true;
        for (const Symbol& s : alt) all = all && symbol_nullable(s, nullable);
        if (all) {
          nullable[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  std::vector<std::vector<uint32_t>> left(n);
  for (uint32_t r = 0; r < n; ++r)
    for (const auto& alt : rules_[r])
      for (const Symbol& s : alt) {
        if (s.kind == Symbol::Kind::rule) left[r].push_back(s.id);
        if (!symbol_nullable(s, nullable)) break;
      }
  std::vector<uint8_t> color(n, 0);
  for (uint32_t start = 0; start < n; ++start)
    if (const uint32_t c = find_cycle(left, start, color); c != kNone)
      fail(gptoss_status_invalid_argument, "{}: a reference cycle that consumes no input (left recursion)", where_[c]);
}

std::shared_ptr<const Grammar> GrammarBuilder::build(uint32_t root) {
  merge_lexemes();
  std::vector<uint32_t> lexeme_index;
  std::vector<Dfa> dfas = compile_lexemes(lexeme_index);
  drop_dead_alternatives(dfas, lexeme_index, root);
  check_left_recursion(dfas, lexeme_index);

  // Rules reachable from the root, renumbered; alternatives flattened.
  std::vector<uint32_t> index(rules_.size(), kNone), order{root};
  index[root] = 0;
  for (size_t i = 0; i < order.size(); ++i)
    for (const auto& alt : rules_[order[i]])
      for (const Symbol& s : alt)
        if (s.kind == Symbol::Kind::rule && index[s.id] == kNone) {
          index[s.id] = uint32_t(order.size());
          order.push_back(s.id);
        }
  std::vector<Symbol> symbols;
  std::vector<std::vector<uint32_t>> alternatives(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    for (const auto& alt : rules_[order[i]]) {
      alternatives[i].push_back(uint32_t(symbols.size()));
      for (Symbol s : alt) {
        if (s.kind == Symbol::Kind::rule) s.id = index[s.id];
        if (s.kind == Symbol::Kind::lexeme) s.id = lexeme_index[s.id];
        symbols.push_back(s);
      }
      symbols.push_back({Symbol::Kind::end, 0});
    }
  auto grammar =
      std::make_shared<const Grammar>(vocab_, std::move(dfas), std::move(symbols), std::move(alternatives), 0);
  // A matcher at the start: an ambiguity too wide to match (anyOf of thousands of branches
  // that all begin alike) is refused now rather than when a sequence starts.
  try {
    Matcher check(grammar);
  } catch (const Error& e) {
    if (e.status() != gptoss_status_insufficient_resources) throw;
    fail(gptoss_status_unsupported_argument, "{}: {}", where_[root], e.what());
  }
  return grammar;
}

}  // namespace gptoss::constrain
