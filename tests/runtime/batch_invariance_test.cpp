// Batch invariance of the forward pass (docs/architecture.md, "Determinism"): a sequence's
// logits are bit for bit the same alone or in a step with other sequences (decoding or
// prefilling), with its prompt processed whole or in chunks of any size, and with a prefix
// kept from an earlier run. Both precisions and both KV dtypes here; tests/CMakeLists.txt runs
// the tag again at every CPU kernel level and over two CPU devices. Random prompts and token
// counts come from a fresh seed, printed on failure.
#include <random>

#include "runtime/invariance_support.hpp"

using namespace gptoss::test;
using namespace gptoss::test::invariance;

namespace {

// One sequence alone, then with `others` sequences in every step of a shared pool: they
// prefill prompts of random lengths (some past the 128-position window) and then, step by
// step, either decode one token or prefill another chunk, while ours decodes.
void check_in_company(size_t others) {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed << ", " << others << " other sequences");
  std::mt19937_64 rng(seed);
  const size_t kSteps = 4;
  std::vector<std::vector<uint32_t>> ours = {random_tokens(rng, 140 + rng() % 60)};
  for (size_t s = 1; s < kSteps; ++s) ours.push_back(random_tokens(rng, 1));
  std::vector<std::vector<std::vector<uint32_t>>> theirs(others);
  for (auto& t : theirs) {
    t.push_back(random_tokens(rng, 1 + rng() % 200));
    for (size_t s = 1; s < kSteps; ++s)
      t.push_back(random_tokens(rng, rng() % 2 ? 1 : 1 + rng() % 40));
  }
  for (const Config& c : configs()) {
    INFO(describe(c));
    auto model = load_conformance_model(Format::hf, 0, c.precision);
    require_same_in_company(model.get(), c, ours, theirs, 400);
  }
}

}  // namespace

TEST_CASE("a sequence's logits do not depend on the sequences in its steps", "[invariance]") {
  for (size_t others : {1u, 3u, 8u, 15u, 40u}) check_in_company(others);
}

TEST_CASE("a prompt's logits do not depend on its chunking", "[invariance]") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const auto prompt = random_tokens(rng, 530 + rng() % 20);  // crosses the window 4 times
  const auto more = random_tokens(rng, 1);
  for (const Config& c : configs()) {
    INFO(describe(c));
    auto model = load_conformance_model(Format::hf, 0, c.precision);
    const auto whole = run_alone(model.get(), c, {prompt, more});
    for (size_t chunk : {1u, 7u, 64u, 500u}) {
      INFO("chunks of " << chunk);
      // Chunks of 1 take a step per token: a shorter prompt keeps the test fast.
      const size_t n = chunk == 1 ? 150 : prompt.size();
      const std::vector<uint32_t> head(prompt.begin(), prompt.begin() + std::ptrdiff_t(n));
      const auto want = chunk == 1 ? run_alone(model.get(), c, {head, more}) : whole;
      auto ctx = make_context(model.get(), 600, chunk, nullptr, c.kv);
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(ctx.get(), head.size(), head.data()));
      GPTOSS_REQUIRE_OK(gptoss_context_process(ctx.get()));
      require_same_bits(logits_of(ctx.get()), want[0]);
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(ctx.get(), 1, more.data()));
      GPTOSS_REQUIRE_OK(gptoss_context_process(ctx.get()));
      require_same_bits(logits_of(ctx.get()), want[1]);
    }
  }
}

// The library's prefix cache: a context truncated back to a shared prefix keeps that prefix's
// KV (computed in the earlier run's steps) and continues with a new suffix; the result must be
// the cold run of prefix + suffix.
TEST_CASE("a prefix kept from an earlier run gives a cold run's logits", "[invariance]") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const auto prefix = random_tokens(rng, 150 + rng() % 100);
  const auto first = random_tokens(rng, 20 + rng() % 150),
             second = random_tokens(rng, 1 + rng() % 60);
  std::vector<uint32_t> cold_prompt = prefix;
  cold_prompt.insert(cold_prompt.end(), second.begin(), second.end());
  for (const Config& c : configs()) {
    INFO(describe(c));
    auto model = load_conformance_model(Format::hf, 0, c.precision);
    const auto cold = run_alone(model.get(), c, {cold_prompt});
    for (bool checkpoint : {true, false}) {
      INFO((checkpoint ? "with a checkpoint at the prefix" : "without a checkpoint"));
      auto pool = make_pool(model.get(), 2048, 2, c.kv);
      auto ctx = make_context(model.get(), 600, 32, pool.get(), c.kv);
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(ctx.get(), prefix.size(), prefix.data()));
      if (checkpoint) GPTOSS_REQUIRE_OK(gptoss_context_set_checkpoint(ctx.get(), prefix.size()));
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(ctx.get(), first.size(), first.data()));
      GPTOSS_REQUIRE_OK(gptoss_context_process(ctx.get()));
      GPTOSS_REQUIRE_OK(gptoss_context_truncate(ctx.get(), prefix.size()));
      size_t resumed = 0;
      GPTOSS_REQUIRE_OK(gptoss_context_get_num_processed_tokens(ctx.get(), &resumed));
      if (checkpoint) CHECK(resumed + 1 >= prefix.size());  // at the checkpoint, or just before
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(ctx.get(), second.size(), second.data()));
      GPTOSS_REQUIRE_OK(gptoss_context_process(ctx.get()));
      require_same_bits(logits_of(ctx.get()), cold[0]);
    }
  }
}

// Past 1024 keys the attention takes a row's keys in segments (ops/attention.cpp): a decode
// token alone splits them over the threads, in company or in a prefill chunk it does not.
TEST_CASE("past 1024 keys a token's logits still do not depend on its step", "[invariance]") {
  const uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const auto prompt = random_tokens(rng, 1100 + rng() % 200);
  const auto next = random_tokens(rng, 1);
  for (const Config& c : configs()) {
    INFO(describe(c));
    auto model = load_conformance_model(Format::hf, 0, c.precision);
    const auto alone = run_alone(model.get(), c, {prompt, next});
    auto pool = make_pool(model.get(), 4 * 1400, 4, c.kv);
    std::vector<ContextPtr> ctxs;
    std::vector<gptoss_context_t> raw;
    for (size_t i = 0; i < 4; ++i) {
      ctxs.push_back(make_context(model.get(), 1400, i == 0 ? 96 : 1024, pool.get(), c.kv));
      raw.push_back(ctxs.back().get());
      const auto p = i == 0 ? prompt : random_tokens(rng, 1 + rng() % 300);
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(raw[i], p.size(), p.data()));
    }
    GPTOSS_REQUIRE_OK(gptoss_contexts_process(raw.data(), raw.size()));
    require_same_bits(logits_of(raw[0]), alone[0]);
    for (size_t i = 0; i < 4; ++i) {
      const auto t = i == 0 ? next : random_tokens(rng, 1);
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(raw[i], 1, t.data()));
    }
    GPTOSS_REQUIRE_OK(gptoss_contexts_process(raw.data(), raw.size()));
    require_same_bits(logits_of(raw[0]), alone[1]);
  }
}
