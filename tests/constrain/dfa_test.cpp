// DFAs against a direct interpretation of the regex tree (sets of end positions), on random
// regexes and strings; and the properties masks rely on: every state can still accept.
#include <catch2/catch.hpp>

#include <random>
#include <set>

#include "constrain/constrain_test_support.hpp"
#include "libgptoss/common/error.hpp"
#include "libgptoss/constrain/dfa.hpp"

using namespace gptoss;
using namespace gptoss::constrain;
using gptoss::test::dfa_accepts;

namespace {

// Positions where a match of `r` starting at `start` can end.
std::set<size_t> ends(const RegexNode& r, const std::string& s, size_t start) {
  switch (r.kind) {
    case RegexNode::Kind::bytes:
      if (start < s.size() && r.set.test(static_cast<uint8_t>(s[start]))) return {start + 1};
      return {};
    case RegexNode::Kind::concat: {
      std::set<size_t> cur = {start};
      for (const auto& p : r.parts) {
        std::set<size_t> next;
        for (size_t q : cur) {
          auto e = ends(*p, s, q);
          next.insert(e.begin(), e.end());
        }
        cur = std::move(next);
      }
      return cur;
    }
    case RegexNode::Kind::alt: {
      std::set<size_t> out;
      for (const auto& p : r.parts) {
        auto e = ends(*p, s, start);
        out.insert(e.begin(), e.end());
      }
      return out;
    }
    case RegexNode::Kind::repeat: {
      std::set<size_t> out, cur = {start};
      if (r.min == 0) out.insert(start);
      for (uint32_t i = 1; i <= std::min<uint32_t>(r.max, uint32_t(s.size() + r.min + 1)); ++i) {
        std::set<size_t> next;
        for (size_t q : cur) {
          auto e = ends(*r.parts[0], s, q);
          next.insert(e.begin(), e.end());
        }
        cur = std::move(next);
        if (i >= r.min) out.insert(cur.begin(), cur.end());
        if (cur.empty()) break;
      }
      return out;
    }
  }
  return {};
}

bool reference_accepts(const Regex& r, const std::string& s) { return ends(*r, s, 0).count(s.size()) != 0; }

Regex random_regex(std::mt19937& rng, int depth) {
  const int kind = depth <= 0 ? 0 : int(rng() % 5);
  switch (kind) {
    case 0: {
      std::bitset<256> set;
      for (char c : std::string("abc"))
        if (rng() % 2) set.set(uint8_t(c));
      return set.none() ? re_byte('a') : re_bytes(set);
    }
    case 1: return re_concat({random_regex(rng, depth - 1), random_regex(rng, depth - 1)});
    case 2: return re_alt({random_regex(rng, depth - 1), random_regex(rng, depth - 1)});
    case 3: {
      const uint32_t min = rng() % 3;
      return re_repeat(random_regex(rng, depth - 1), min, rng() % 2 ? RegexNode::kUnbounded : min + rng() % 3);
    }
    default: return rng() % 4 == 0 ? re_empty() : re_literal(std::string(1 + rng() % 3, char('a' + rng() % 3)));
  }
}

}  // namespace

TEST_CASE("DFAs accept exactly what the regex tree matches", "[constrain][dfa]") {
  std::mt19937 rng(3);
  for (int i = 0; i < 300; ++i) {
    const Regex r = random_regex(rng, 4);
    const Dfa d = Dfa::compile(r, 1 << 16);
    for (int j = 0; j < 60; ++j) {
      std::string s;
      for (size_t n = rng() % 9; n-- > 0;) s += char('a' + rng() % 4);
      INFO("regex " << i << " string \"" << s << "\"");
      CHECK(dfa_accepts(d, s) == reference_accepts(r, s));
    }
  }
}

TEST_CASE("every DFA state can still reach acceptance; empty languages have no start", "[constrain][dfa]") {
  std::mt19937 rng(4);
  for (int i = 0; i < 200; ++i) {
    const Dfa d = Dfa::compile(random_regex(rng, 4), 1 << 16);
    for (int32_t s = 0; s < int32_t(d.num_states()); ++s) {
      // Breadth-first search for an accepting state.
      std::vector<int32_t> todo = {s};
      std::set<int32_t> seen = {s};
      bool found = false;
      while (!todo.empty() && !found) {
        int32_t t = todo.back();
        todo.pop_back();
        found = d.accepting(t);
        for (int b = 0; b < 256; ++b) {
          int32_t n = d.step(t, uint8_t(b));
          if (n != Dfa::kDead && seen.insert(n).second) todo.push_back(n);
        }
      }
      CHECK(found);
      CHECK(d.continues(s) == [&] {
        for (int b = 0; b < 256; ++b)
          if (d.step(s, uint8_t(b)) != Dfa::kDead) return true;
        return false;
      }());
    }
  }
  CHECK(Dfa::compile(re_nothing(), 10).start() == Dfa::kDead);
  CHECK(Dfa::compile(re_concat({re_byte('a'), re_nothing()}), 10).start() == Dfa::kDead);
  const Dfa empty = Dfa::compile(re_empty(), 10);
  CHECK(empty.accepting(empty.start()));
  CHECK_FALSE(empty.continues(empty.start()));
}

TEST_CASE("DFA size is bounded: a lexeme beyond the state limit is an error", "[constrain][dfa]") {
  // (a|b)*a(a|b){12}: the classic exponential subset construction.
  const Regex ab = re_alt({re_byte('a'), re_byte('b')});
  const Regex r = re_concat({re_star(ab), re_byte('a'), re_repeat(ab, 12, 12)});
  try {
    Dfa::compile(r, 1000);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.status() == gptoss_status_unsupported_argument);
    CHECK_THAT(e.what(), Catch::Contains("1000 automaton states"));
  }
  CHECK(Dfa::compile(r, 1 << 16).num_states() > 1000);
}

TEST_CASE("minimization merges equivalent states; equal automata compare equal", "[constrain][dfa]") {
  // ab|cb: the subset construction makes separate states after 'a' and after 'c'.
  CHECK(Dfa::compile(re_alt({re_literal("ab"), re_literal("cb")}), 100).num_states() == 3);
  const Dfa x = Dfa::compile(re_concat({re_alt({re_byte('a'), re_byte('c')}), re_byte('b')}), 100);
  const Dfa y = Dfa::compile(re_concat({re_alt({re_byte('a'), re_byte('c')}), re_byte('b')}), 100);
  CHECK(x.num_states() == 3);
  CHECK(x == y);
  CHECK(x.hash() == y.hash());
  CHECK_FALSE(x == Dfa::compile(re_literal("ab"), 100));
}
