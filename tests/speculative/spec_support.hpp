#pragma once
// Pieces of the speculative decoding tests (speculative_test.cpp, random_models_test.cpp):
// plain decoding and drafted decoding of the same prompt, the kernel levels they run at, the
// fresh seed.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "support/c_api.hpp"
#include "support/cpu_levels.hpp"
#include "support/sanitized.hpp"

namespace gptoss::test::spec {

inline uint32_t fresh_seed() {
  static const uint32_t seed = [] {
    uint32_t s = 0;
    if (const char* e = std::getenv("GPTOSS_TEST_SEED")) s = uint32_t(std::strtoul(e, nullptr, 10));
    else s = uint32_t(std::random_device{}());
    std::cout << "speculative_test: fresh seed " << s << " (GPTOSS_TEST_SEED=" << s
              << " replays it)\n";
    return s;
  }();
  return seed;
}

// The levels the identity tests run at (every CPU kernel level is chunk- and batch-invariant:
// invariance.<level>): every level this machine runs; under the sanitizers one level drawn
// from the fresh seed (out of all six, as a named level runs here: scalar, ~20 times slower,
// stays a one-in-six draw); or GPTOSS_TEST_SPEC_ISAS="scalar,avx2,...".
inline std::vector<std::string> identity_isas() {
  const char* env = std::getenv("GPTOSS_TEST_SPEC_ISAS");
  if (env == nullptr || *env == '\0') {
    if (kSanitized) {
      const std::vector<std::string> all = cpu_levels();
      return {all[fresh_seed() % all.size()]};
    }
    return cpu_levels_here();
  }
  std::vector<std::string> out;
  std::stringstream ss(env);
  for (std::string isa; std::getline(ss, isa, ',');) out.push_back(isa);
  return out;
}

struct TokDeleter {
  void operator()(gptoss_tokenizer* t) const { gptoss_tokenizer_release(t); }
};
struct GrammarDeleter {
  void operator()(gptoss_grammar* g) const { gptoss_grammar_release(g); }
};
struct ConstraintDeleter {
  void operator()(gptoss_constraint* c) const { gptoss_constraint_release(c); }
};
struct SpecDeleter {
  void operator()(gptoss_speculator* s) const { gptoss_speculator_release(s); }
};
using TokPtr = std::unique_ptr<gptoss_tokenizer, TokDeleter>;
using GrammarPtr = std::unique_ptr<gptoss_grammar, GrammarDeleter>;
using ConstraintPtr = std::unique_ptr<gptoss_constraint, ConstraintDeleter>;
using SpecPtr = std::unique_ptr<gptoss_speculator, SpecDeleter>;

inline std::vector<uint32_t> tokens_of(gptoss_context_t c) {
  std::vector<uint32_t> t(8192);
  size_t n = 0;
  GPTOSS_REQUIRE_OK(gptoss_context_get_tokens(c, t.data(), t.size(), &n));
  t.resize(n);
  return t;
}

inline size_t processed_of(gptoss_context_t c) {
  size_t n = 0;
  GPTOSS_REQUIRE_OK(gptoss_context_get_num_processed_tokens(c, &n));
  return n;
}

// Plain decoding: n rounds of sample and append (fewer if `constraint` finishes).
inline std::vector<uint32_t> plain(gptoss_model_t m, const std::vector<uint32_t>& prompt, size_t n,
                                   gptoss_sampler_t sampler, size_t max_batch = 512,
                                   gptoss_constraint_t constraint = nullptr,
                                   gptoss_kv_dtype kv = gptoss_kv_dtype_f32) {
  auto c = make_context(m, 1024, max_batch, nullptr, kv);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), prompt.size(), prompt.data()));
  std::vector<uint32_t> out;
  for (size_t i = 0; i < n; ++i) {
    int32_t finished = 0;
    if (constraint != nullptr)
      GPTOSS_REQUIRE_OK(gptoss_constraint_is_finished(constraint, &finished));
    if (finished) break;
    uint32_t t = 0;
    GPTOSS_REQUIRE_OK(gptoss_context_sample(c.get(), sampler, &t));
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), 1, &t));
    out.push_back(t);
  }
  return out;
}

// What a drafted() run did: steps that rejected part of their draft, of them the ones whose
// rollback returned a KV page, and the ones that rolled back from `straddle` or past it to
// before it (0: none asked for).
struct DraftedRun {
  size_t straddle = 0;  // a position to roll back across once (the sliding window: 128)
  gptoss_kv_dtype kv = gptoss_kv_dtype_f32;  // of the context
  size_t rejected = 0, page_rollbacks = 0, straddle_rollbacks = 0;
  ContextPtr context;  // the context at the end: every kept token processed, the last pending
};

// Decoding through gptoss_context_sample_draft with drafts taken from `oracle` (what plain
// decoding gave) and spoiled at random: random lengths, a wrong token at a random place, so
// every step keeps a different prefix and rolls back the rest. With run->straddle, the steps
// before it stop short of it, and the first that can reach it drafts past it and is spoiled
// before it. Checks the context after
// each step: the kept tokens appended, all of them processed (no recomputation after a
// rollback).
inline std::vector<uint32_t> drafted(gptoss_model_t m, const std::vector<uint32_t>& prompt,
                                     size_t n, gptoss_sampler_t sampler,
                                     const std::vector<uint32_t>& oracle, std::mt19937& rng,
                                     size_t max_batch, DraftedRun* run) {
  const size_t P = GPTOSS_KV_PAGE_SIZE;
  auto c = make_context(m, 1024, max_batch, nullptr, run->kv);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), prompt.size(), prompt.data()));
  std::vector<uint32_t> out;
  bool straddled = run->straddle == 0;
  while (out.size() < n) {
    const size_t before = tokens_of(c.get()).size();
    const size_t room = std::min(n - out.size() - 1, max_batch - 1);
    std::vector<uint32_t> draft;
    // The first step always drafts and is always spoiled: every run rolls back at least once.
    const size_t min_len = out.empty() ? std::min<size_t>(1, room) : 0;
    size_t len = std::uniform_int_distribution<size_t>(min_len, room)(rng);
    // Positions before + i; spoiled at `at` <= S - before, the step keeps at most S - before
    // of them and rolls back the ones from S on.
    const size_t S = run->straddle;
    const bool straddle_now = !straddled && before <= S && before + room > S;
    if (straddle_now) len = std::min(room, S - before + 1 + rng() % 4);
    // Short of it, no step may jump over it: the next one starts at S at the latest.
    else if (!straddled && before < S) len = std::min(len, S - before - 1);
    for (size_t i = 0; i < len && out.size() + i < oracle.size(); ++i)
      draft.push_back(oracle[out.size() + i]);
    if (!draft.empty() && (out.empty() || straddle_now || rng() % 2 == 0)) {
      const size_t at = straddle_now ? rng() % (S - before + 1) : rng() % draft.size();
      draft[at] = (draft[at] + 1 + uint32_t(rng() % 201087)) % 201088;  // never the oracle's
    }
    straddled = straddled || straddle_now;
    std::vector<uint32_t> got(draft.size() + 1);
    size_t n_got = 0;
    GPTOSS_REQUIRE_OK(gptoss_context_sample_draft(c.get(), sampler, draft.data(), draft.size(),
                                                  nullptr, got.data(), got.size(), &n_got));
    REQUIRE(n_got >= 1);
    REQUIRE(n_got <= draft.size() + 1);
    got.resize(n_got);
    const std::vector<uint32_t> now = tokens_of(c.get());
    REQUIRE(now.size() == before + n_got - 1);  // kept drafted tokens appended, the last not
    for (size_t i = 0; i + 1 < n_got; ++i) REQUIRE(now[before + i] == draft[i]);
    if (n_got - 1 < draft.size()) {
      ++run->rejected;
      REQUIRE(processed_of(c.get()) == now.size());  // rolled back, nothing to recompute
      const size_t end = before + draft.size();      // tokens the step held
      if ((now.size() + P - 1) / P < (end + P - 1) / P) ++run->page_rollbacks;
      if (S > 0 && now.size() <= S && end > S) ++run->straddle_rollbacks;
    }
    out.insert(out.end(), got.begin(), got.end());
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), 1, &got.back()));
  }
  out.resize(n);
  run->context = std::move(c);
  return out;
}

}  // namespace gptoss::test::spec
