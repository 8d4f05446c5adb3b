// Speculative decoding (docs/speculative.md): verified drafts give the tokens plain decoding
// gives, greedy and sampled, with rollback across KV pages and the sliding window; drafted
// tokens a grammar forbids are dropped; bad input is refused with a clear status.
//
// Identical tokens need identical logits for one token whatever step computes it, which every
// CPU kernel level guarantees; every identity test runs once per level this machine runs
// (spec_support.hpp's identity_isas), the slow scalar level with part of its matrix drawn from
// the seed (GPTOSS_TEST_SPEC_ISAS="scalar,avx2,..." runs other levels).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "speculative/spec_support.hpp"

using namespace gptoss::test;
using namespace gptoss::test::spec;

namespace {

ModelPtr load(gptoss_precision precision, uint32_t num_layers = 0) {
  return load_conformance_model(Format::hf, num_layers, precision);
}

std::vector<uint32_t> prompt_of(const char* name, size_t n = 0) {
  std::vector<uint32_t> p = prompt_ids(name);
  if (n > 0 && n < p.size()) p.resize(n);
  return p;
}

}  // namespace

TEST_CASE("drafted decoding gives plain decoding's tokens, greedy and sampled", "[speculative]") {
  const uint32_t seed = fresh_seed();
  for (const std::string& isa : identity_isas()) {
    ScopedCpuLevel scope(isa);
    // Two models: the conformance model and its first two layers. The scalar level (half the
    // test's time at every level together) and the sanitized build (its runs check memory, not
    // tokens) run one precision on one of them, drawn from the seed.
    std::vector<gptoss_precision> precisions = {gptoss_precision_exact, gptoss_precision_fast};
    std::vector<uint32_t> layer_counts = {0u, 2u};
    if (kSanitized || isa == "scalar") {
      precisions = {precisions[(seed >> 4) % 2]};
      layer_counts = {layer_counts[(seed >> 5) % 2]};
    }
    for (gptoss_precision precision : precisions) {
      for (uint32_t layers : layer_counts) {
        auto model = load(precision, layers);
        // A prompt short of a page, one past the sliding window (128) with chunked prefill.
        for (const auto& [name, len, max_batch] :
             {std::tuple{"p1_short", size_t(0), size_t(512)},
              std::tuple{"p3_long", size_t(120), size_t(16)}}) {
          const std::vector<uint32_t> prompt = prompt_of(name, len);
          for (float temperature : {0.0f, 1.0f}) {
            for (uint64_t s : {uint64_t(1), uint64_t(seed)}) {
              INFO("isa " << isa << " precision " << int(precision) << " layers " << layers
                          << " prompt " << name << " temperature " << temperature << " seed " << s
                          << " (fresh seed " << seed << ")");
              const size_t n = 40;  // crosses pages, and position 128 with the long prompt
              auto ref_sampler = make_sampler(temperature, s, temperature > 0 ? 8 : 0);
              const std::vector<uint32_t> ref =
                  plain(model.get(), prompt, n, ref_sampler.get(), max_batch);
              auto sampler = make_sampler(temperature, s, temperature > 0 ? 8 : 0);
              std::mt19937 rng(uint32_t(s) ^ 0x5eedu);
              DraftedRun run;
              const std::vector<uint32_t> got =
                  drafted(model.get(), prompt, n, sampler.get(), ref, rng, max_batch, &run);
              CHECK(got == ref);
              CHECK(run.rejected > 0);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("speculator: prompt lookup and a draft model keep plain decoding's tokens",
          "[speculative]") {
  const uint32_t seed = fresh_seed();
  for (const std::string& isa : identity_isas()) {
    ScopedCpuLevel scope(isa);
    // The scalar level, the slowest, takes one precision a run, drawn from the seed.
    std::vector<gptoss_precision> precisions = {gptoss_precision_exact, gptoss_precision_fast};
    if (isa == "scalar") precisions = {precisions[(seed >> 4) % 2]};
    for (gptoss_precision precision : precisions) {
      auto model = load(precision);
      auto draft_model = load(precision, 1);
      // A repetitive prompt: the same text twice, so prompt lookup finds continuations.
      std::vector<uint32_t> prompt = prompt_of("p2_harmony");
      const std::vector<uint32_t> once = prompt;
      prompt.insert(prompt.end(), once.begin(), once.end());
      for (float temperature : {0.0f, 1.0f}) {
        // 0: prompt lookup; 1: a one-layer draft model; 2: the model itself as its draft.
        for (int drafter : {0, 1, 2}) {
          INFO("isa " << isa << " precision " << int(precision) << " temperature " << temperature
                      << " drafter " << drafter << " seed " << seed);
          const size_t n = 48;
          auto ref_sampler = make_sampler(temperature, seed, temperature > 0 ? 4 : 0);
          const auto ref = plain(model.get(), prompt, n, ref_sampler.get());
          gptoss_speculator_options so;
          GPTOSS_REQUIRE_OK(gptoss_speculator_options_init(&so));
          so.draft_model = drafter == 1 ? draft_model.get() : drafter == 2 ? model.get() : nullptr;
          so.max_draft = 6;
          // The model drafting for itself costs a plain step per drafted token, which the cost
          // bound would (rightly) stop; what is tested here is that its drafts are all kept.
          so.cost_bound = drafter == 2 ? 0 : 1;
          gptoss_speculator_t raw = nullptr;
          GPTOSS_REQUIRE_OK(gptoss_speculator_create(&so, &raw));
          SpecPtr spec(raw);
          auto sampler = make_sampler(temperature, seed, temperature > 0 ? 4 : 0);
          auto c = make_context(model.get(), 1024);
          GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), prompt.size(), prompt.data()));
          std::vector<uint32_t> got;
          while (got.size() < n) {
            uint32_t buf[16];
            size_t k = 0;
            const size_t cap = std::min<size_t>(16, n - got.size());
            GPTOSS_REQUIRE_OK(
                gptoss_speculator_step(spec.get(), c.get(), sampler.get(), nullptr, buf, cap, &k));
            REQUIRE(k >= 1);
            REQUIRE(k <= cap);
            got.insert(got.end(), buf, buf + k);
            GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), 1, &buf[k - 1]));
          }
          CHECK(got == ref);
          gptoss_speculator_stats st;
          st.struct_size = sizeof st;
          GPTOSS_REQUIRE_OK(gptoss_speculator_get_stats(spec.get(), &st));
          CHECK(st.steps > 0);
          CHECK(st.steps + st.accepted == got.size());  // every step gives one token more
          CHECK(st.accepted <= st.drafted);
          CHECK(st.drafted > 0);
          // Its own greedy continuation is what the model chooses greedily.
          if (drafter == 2 && temperature == 0.0f) {
            CHECK(st.accepted == st.drafted);
            CHECK(st.steps < n / 2);
          }
        }
      }
    }
  }
}

// The sampled token at a verified position follows the model's distribution: the standard
// speculative-sampling rule, tested as a chi-square over many seeds at one position whose
// drafted token is the second most likely (kept sometimes, rejected otherwise). top_k 4 keeps
// four categories; p < 1e-4 fails (critical value 21.1 at 3 degrees of freedom).
TEST_CASE("verified sampling keeps the model's distribution (chi-square over seeds)",
          "[speculative]") {
  auto model = load(gptoss_precision_exact);
  const std::vector<uint32_t> prompt = prompt_of("p1_short");
  auto c = make_context(model.get(), 256);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), prompt.size(), prompt.data()));
  GPTOSS_REQUIRE_OK(gptoss_context_process(c.get()));
  const std::vector<float> logits = logits_of(c.get());
  // The model's top-4 distribution at temperature 2 (flatter: every category gets counts).
  const float temperature = 2.0f;
  std::vector<uint32_t> top(logits.size());
  std::iota(top.begin(), top.end(), 0u);
  std::partial_sort(top.begin(), top.begin() + 4, top.end(), [&](uint32_t a, uint32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  top.resize(4);
  std::vector<double> p(4);
  double z = 0;
  for (int i = 0; i < 4; ++i) z += p[i] = std::exp((logits[top[i]] - logits[top[0]]) / temperature);
  for (double& x : p) x /= z;
  const uint32_t drafted_token = top[1];
  const uint32_t base = fresh_seed();
  const size_t N = 400;
  std::vector<size_t> count(4, 0);
  size_t kept = 0;
  for (size_t i = 0; i < N; ++i) {
    auto sampler = make_sampler(temperature, uint64_t(base) * 1000003u + i, 4);
    GPTOSS_REQUIRE_OK(gptoss_context_truncate(c.get(), prompt.size()));
    const uint32_t draft[2] = {drafted_token, top[0]};
    uint32_t out[3];
    size_t n = 0;
    GPTOSS_REQUIRE_OK(
        gptoss_context_sample_draft(c.get(), sampler.get(), draft, 2, nullptr, out, 3, &n));
    const auto it = std::find(top.begin(), top.end(), out[0]);
    REQUIRE(it != top.end());
    ++count[size_t(it - top.begin())];
    kept += out[0] == drafted_token;
  }
  double chi2 = 0;
  for (int i = 0; i < 4; ++i) chi2 += std::pow(double(count[i]) - N * p[i], 2) / (N * p[i]);
  INFO("seeds from " << base << ": counts " << count[0] << " " << count[1] << " " << count[2] << " "
                     << count[3] << ", expected " << N * p[0] << " " << N * p[1] << " " << N * p[2]
                     << " " << N * p[3] << ", chi2 " << chi2);
  CHECK(chi2 < 21.1);
  CHECK(kept > 0);
  CHECK(kept < N);
}

TEST_CASE("a rejected draft rolls back across a page and keeps the sliding window",
          "[speculative]") {
  ScopedCpuLevel scope("scalar");
  auto model = load(gptoss_precision_exact);
  const std::vector<uint32_t> prompt = prompt_of("p3_long", 140);  // past the 128 window
  auto sampler = make_sampler(0.0f, 1);
  // Position 140 is inside the page [128, 144); a draft of 10 reaches into the next page.
  auto c = make_context(model.get(), 512, 16);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), prompt.size(), prompt.data()));
  std::vector<uint32_t> draft(10, 7);  // wrong from the first
  uint32_t out[11];
  size_t n = 0;
  GPTOSS_REQUIRE_OK(gptoss_context_sample_draft(c.get(), sampler.get(), draft.data(), draft.size(),
                                                nullptr, out, 11, &n));
  REQUIRE(n >= 1);
  const size_t kept = n - 1;
  CHECK(tokens_of(c.get()).size() == prompt.size() + kept);
  CHECK(processed_of(c.get()) == prompt.size() + kept);
  // Continue both: after the rollback the next token's logits equal a fresh context's.
  std::vector<uint32_t> seq = tokens_of(c.get());
  seq.push_back(out[n - 1]);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), 1, &out[n - 1]));
  GPTOSS_REQUIRE_OK(gptoss_context_process(c.get()));
  auto fresh = make_context(model.get(), 512, 16);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(fresh.get(), seq.size(), seq.data()));
  GPTOSS_REQUIRE_OK(gptoss_context_process(fresh.get()));
  CHECK(max_abs_diff(logits_of(c.get()), logits_of(fresh.get())) == 0.0);
  // A KV pool shared with another context: the rollback returns the pages it took.
  const KvPtr kv = make_pool(model.get(), 1024);
  auto shared = make_context(model.get(), 512, 16, kv.get());
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(shared.get(), prompt.size(), prompt.data()));
  GPTOSS_REQUIRE_OK(gptoss_context_process(shared.get()));
  size_t free_before = 0, free_after = 0;
  GPTOSS_REQUIRE_OK(gptoss_kvcache_get_free_tokens(kv.get(), &free_before));
  GPTOSS_REQUIRE_OK(gptoss_context_sample_draft(shared.get(), sampler.get(), draft.data(),
                                                draft.size(), nullptr, out, 11, &n));
  GPTOSS_REQUIRE_OK(gptoss_kvcache_get_free_tokens(kv.get(), &free_after));
  const size_t P = GPTOSS_KV_PAGE_SIZE;
  const size_t pages_now = (prompt.size() + n - 1 + P - 1) / P,
               pages_before = (prompt.size() + P - 1) / P;
  CHECK(free_before - free_after == (pages_now - pages_before) * P);
}

TEST_CASE("drafted tokens the grammar forbids are dropped, forced tokens are drafted",
          "[speculative][constrain]") {
  ScopedCpuLevel scope("scalar");
  auto model = load(gptoss_precision_exact);
  gptoss_tokenizer_t tok_raw = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_model_get_tokenizer(model.get(), &tok_raw));
  TokPtr tok(tok_raw);
  // A Harmony turn with the final channel only: its header's special tokens are forced.
  gptoss_grammar_t g_raw = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_grammar_create_harmony(tok.get(), R"({"channels": ["final"]})", &g_raw));
  GrammarPtr grammar(g_raw);
  auto make_constraint = [&] {
    gptoss_constraint_t c = nullptr;
    GPTOSS_REQUIRE_OK(gptoss_constraint_create(grammar.get(), nullptr, &c));
    return ConstraintPtr(c);
  };
  const std::vector<uint32_t> prompt = prompt_of("p2_harmony");
  const size_t n = 24;
  auto ref_constraint = make_constraint();
  auto ref_sampler = make_sampler(0.0f, 1);
  GPTOSS_REQUIRE_OK(gptoss_sampler_set_constraint(ref_sampler.get(), ref_constraint.get()));
  const std::vector<uint32_t> ref =
      plain(model.get(), prompt, n, ref_sampler.get(), 512, ref_constraint.get());
  REQUIRE(ref.size() >= 3);

  SECTION("a forbidden drafted token and what follows it are dropped") {
    // A token the grammar forbids after ref[0].
    auto probe = make_constraint();
    GPTOSS_REQUIRE_OK(gptoss_constraint_accept_token(probe.get(), ref[0]));
    std::vector<uint32_t> mask(GPTOSS_MASK_WORDS(201088));
    size_t words = 0;
    GPTOSS_REQUIRE_OK(gptoss_constraint_fill_mask(probe.get(), mask.data(), mask.size(), &words));
    uint32_t forbidden = 0;
    while ((mask[forbidden / 32] >> (forbidden % 32)) & 1u) ++forbidden;
    auto constraint = make_constraint();
    auto sampler = make_sampler(0.0f, 1);
    GPTOSS_REQUIRE_OK(gptoss_sampler_set_constraint(sampler.get(), constraint.get()));
    auto c = make_context(model.get(), 256);
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), prompt.size(), prompt.data()));
    const uint32_t draft[3] = {ref[0], forbidden, ref[2]};
    uint32_t out[4];
    size_t k = 0;
    GPTOSS_REQUIRE_OK(
        gptoss_context_sample_draft(c.get(), sampler.get(), draft, 3, nullptr, out, 4, &k));
    REQUIRE(k == 2);  // ref[0] kept, the forbidden token and ref[2] dropped, ref[1] sampled
    CHECK(out[0] == ref[0]);
    CHECK(out[1] == ref[1]);
    const std::vector<uint32_t> now = tokens_of(c.get());
    CHECK(now.size() == prompt.size() + 1);
    CHECK(now.back() == ref[0]);
  }
  SECTION("the speculator's jump-forward drafts forced tokens and keeps plain decoding's tokens") {
    auto constraint = make_constraint();
    auto sampler = make_sampler(0.0f, 1);
    GPTOSS_REQUIRE_OK(gptoss_sampler_set_constraint(sampler.get(), constraint.get()));
    gptoss_speculator_options so;
    GPTOSS_REQUIRE_OK(gptoss_speculator_options_init(&so));
    so.prompt_lookup = 0;
    gptoss_speculator_t raw = nullptr;
    GPTOSS_REQUIRE_OK(gptoss_speculator_create(&so, &raw));
    SpecPtr spec(raw);
    auto c = make_context(model.get(), 256);
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), prompt.size(), prompt.data()));
    std::vector<uint32_t> got;
    while (got.size() < n) {
      int32_t finished = 0;
      GPTOSS_REQUIRE_OK(gptoss_constraint_is_finished(constraint.get(), &finished));
      if (finished) break;
      uint32_t buf[32];
      size_t k = 0;
      GPTOSS_REQUIRE_OK(gptoss_speculator_step(spec.get(), c.get(), sampler.get(), nullptr, buf,
                                               std::min<size_t>(32, n - got.size()), &k));
      got.insert(got.end(), buf, buf + k);
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), 1, &buf[k - 1]));
    }
    CHECK(got == ref);
    gptoss_speculator_stats st;
    st.struct_size = sizeof st;
    GPTOSS_REQUIRE_OK(gptoss_speculator_get_stats(spec.get(), &st));
    INFO("steps " << st.steps << " drafted " << st.drafted << " accepted " << st.accepted
                  << " forced " << st.forced);
    CHECK(st.forced > 0);
    CHECK(st.forced == st.accepted);  // no drafter: only forced tokens are drafted
    CHECK(st.steps < got.size());
  }
}

TEST_CASE("the adaptive draft length stops drafting what is never kept", "[speculative]") {
  // A drafter that always proposes (prompt lookup over a sequence of one repeated token)
  // and is never right: the speculator pauses and probes, a two-token step in 65 at most.
  auto model = load(gptoss_precision_exact, 1);
  auto sampler = make_sampler(0.0f, 1);
  gptoss_speculator_t raw = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_speculator_create(nullptr, &raw));
  SpecPtr spec(raw);
  auto c = make_context(model.get(), 1024);
  // A B A B ... A: prompt lookup always proposes B; B is chosen unlike the greedy token.
  auto abab = [](uint32_t b) {
    std::vector<uint32_t> p;
    for (int i = 0; i < 8; ++i) p.insert(p.end(), {100u, b});
    p.push_back(100u);
    return p;
  };
  std::vector<uint32_t> prompt = abab(200);
  auto greedy = make_sampler(0.0f, 1);
  if (plain(model.get(), prompt, 1, greedy.get())[0] == 200) prompt = abab(201);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), prompt.size(), prompt.data()));
  size_t drafted_late = 0;
  // The cost bound holds each probe back until the tokens so far pay for it, so the pauses
  // reach their longest later than the adaptive length alone would: count from step 400.
  for (int step = 0; step < 600; ++step) {
    gptoss_speculator_stats before;
    before.struct_size = sizeof before;
    GPTOSS_REQUIRE_OK(gptoss_speculator_get_stats(spec.get(), &before));
    uint32_t buf[9];
    size_t k = 0;
    GPTOSS_REQUIRE_OK(
        gptoss_speculator_step(spec.get(), c.get(), sampler.get(), nullptr, buf, 9, &k));
    GPTOSS_REQUIRE_OK(gptoss_context_truncate(c.get(), prompt.size()));  // always the same spot
    gptoss_speculator_stats after;
    after.struct_size = sizeof after;
    GPTOSS_REQUIRE_OK(gptoss_speculator_get_stats(spec.get(), &after));
    if (step >= 400) drafted_late += after.drafted - before.drafted;
  }
  gptoss_speculator_stats st;
  st.struct_size = sizeof st;
  GPTOSS_REQUIRE_OK(gptoss_speculator_get_stats(spec.get(), &st));
  INFO("drafted " << st.drafted << " accepted " << st.accepted << ", in the last 200 steps "
                  << drafted_late);
  CHECK(st.accepted == 0);
  CHECK(st.drafted > 0);
  CHECK(drafted_late <= 200 / 65 + 1);
}

TEST_CASE("speculative API: bad input gets a clear status", "[speculative][bad-input]") {
  auto model = load(gptoss_precision_exact, 1);
  auto sampler = make_sampler(0.0f, 1);
  auto c = make_context(model.get(), 64, 8);
  uint32_t out[16];
  size_t n = 0;
  const uint32_t draft[4] = {1, 2, 3, 4};
  // An empty context.
  CHECK(gptoss_context_sample_draft(c.get(), sampler.get(), draft, 2, nullptr, out, 16, &n) ==
        gptoss_status_invalid_state);
  const std::vector<uint32_t> prompt = prompt_of("p1_short");
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), prompt.size(), prompt.data()));
  CHECK(gptoss_context_sample_draft(nullptr, sampler.get(), draft, 2, nullptr, out, 16, &n) ==
        gptoss_status_invalid_argument);
  CHECK(gptoss_context_sample_draft(c.get(), nullptr, draft, 2, nullptr, out, 16, &n) ==
        gptoss_status_invalid_argument);
  CHECK(gptoss_context_sample_draft(c.get(), sampler.get(), nullptr, 2, nullptr, out, 16, &n) ==
        gptoss_status_invalid_argument);
  CHECK(gptoss_context_sample_draft(c.get(), sampler.get(), draft, 2, nullptr, nullptr, 16, &n) ==
        gptoss_status_invalid_argument);
  CHECK(gptoss_context_sample_draft(c.get(), sampler.get(), draft, 2, nullptr, out, 16, nullptr) ==
        gptoss_status_invalid_argument);
  n = 0;
  CHECK(gptoss_context_sample_draft(c.get(), sampler.get(), draft, 4, nullptr, out, 4, &n) ==
        gptoss_status_buffer_too_small);
  CHECK(n == 5);
  const uint32_t bad[2] = {5, 201088};
  CHECK(gptoss_context_sample_draft(c.get(), sampler.get(), bad, 2, nullptr, out, 16, &n) ==
        gptoss_status_invalid_argument);
  CHECK(std::string(gptoss_get_last_error_message()).find("index 1") != std::string::npos);
  const uint32_t long_draft[8] = {};  // 8 + 1 > max_batch_tokens 8
  CHECK(gptoss_context_sample_draft(c.get(), sampler.get(), long_draft, 8, nullptr, out, 16, &n) ==
        gptoss_status_invalid_argument);
  CHECK(std::string(gptoss_get_last_error_message()).find("max_batch_tokens") != std::string::npos);
  gptoss_draft_options o;
  GPTOSS_REQUIRE_OK(gptoss_draft_options_init(&o));
  o.n_stop_tokens = 1;
  CHECK(gptoss_context_sample_draft(c.get(), sampler.get(), draft, 2, &o, out, 16, &n) ==
        gptoss_status_invalid_argument);
  o.struct_size = 4;
  CHECK(gptoss_context_sample_draft(c.get(), sampler.get(), draft, 2, &o, out, 16, &n) ==
        gptoss_status_invalid_argument);
  // Nothing above changed the context.
  CHECK(tokens_of(c.get()) == prompt);
  // A draft beyond the context's room (64 tokens).
  auto tight = make_context(model.get(), 12, 8);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(tight.get(), prompt.size(), prompt.data()));
  CHECK(gptoss_context_sample_draft(tight.get(), sampler.get(), draft, 3, nullptr, out, 16, &n) ==
        gptoss_status_context_overflow);
  CHECK(tokens_of(tight.get()) == prompt);
  // Zero drafted tokens: one plain sample.
  GPTOSS_REQUIRE_OK(
      gptoss_context_sample_draft(c.get(), sampler.get(), nullptr, 0, nullptr, out, 1, &n));
  CHECK(n == 1);
  // The speculator.
  gptoss_speculator_t s = nullptr;
  CHECK(gptoss_speculator_create(nullptr, nullptr) == gptoss_status_invalid_argument);
  gptoss_speculator_options so;
  GPTOSS_REQUIRE_OK(gptoss_speculator_options_init(&so));
  so.struct_size = 3;
  CHECK(gptoss_speculator_create(&so, &s) == gptoss_status_invalid_argument);
  CHECK(s == nullptr);
  GPTOSS_REQUIRE_OK(gptoss_speculator_create(nullptr, &s));
  SpecPtr spec(s);
  CHECK(gptoss_speculator_step(nullptr, c.get(), sampler.get(), nullptr, out, 16, &n) ==
        gptoss_status_invalid_argument);
  CHECK(gptoss_speculator_step(s, nullptr, sampler.get(), nullptr, out, 16, &n) ==
        gptoss_status_invalid_argument);
  CHECK(gptoss_speculator_step(s, c.get(), nullptr, nullptr, out, 16, &n) ==
        gptoss_status_invalid_argument);
  CHECK(gptoss_speculator_step(s, c.get(), sampler.get(), nullptr, out, 0, &n) ==
        gptoss_status_invalid_argument);
  CHECK(gptoss_speculator_step(s, c.get(), sampler.get(), nullptr, nullptr, 16, &n) ==
        gptoss_status_invalid_argument);
  gptoss_speculator_stats st;
  st.struct_size = 8;
  CHECK(gptoss_speculator_get_stats(s, &st) == gptoss_status_invalid_argument);
  CHECK(gptoss_speculator_get_stats(s, nullptr) == gptoss_status_invalid_argument);
  CHECK(gptoss_speculator_release(nullptr) == gptoss_status_success);
  // A finished constraint.
  gptoss_tokenizer_t tok_raw = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_model_get_tokenizer(model.get(), &tok_raw));
  TokPtr tok(tok_raw);
  gptoss_grammar_t g = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_grammar_create_json_schema(tok.get(), R"({"const":1})", &g));
  GrammarPtr grammar(g);
  gptoss_constraint_t cons = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_constraint_create(g, nullptr, &cons));
  ConstraintPtr constraint(cons);
  auto cs = make_sampler(0.0f, 1);
  GPTOSS_REQUIRE_OK(gptoss_sampler_set_constraint(cs.get(), cons));
  for (int i = 0; i < 8; ++i) {
    int32_t finished = 0;
    GPTOSS_REQUIRE_OK(gptoss_constraint_is_finished(cons, &finished));
    if (finished) break;
    uint32_t t = 0;
    GPTOSS_REQUIRE_OK(gptoss_context_sample(c.get(), cs.get(), &t));
  }
  CHECK(gptoss_context_sample_draft(c.get(), cs.get(), draft, 1, nullptr, out, 16, &n) ==
        gptoss_status_invalid_state);
}
