// The speculator's step in two halves (gptoss_speculator_draft / _verify) around one
// gptoss_contexts_process of several contexts on a shared KV pool — a server's continuous
// batching: each sequence gets plain decoding's tokens and log-probabilities (values and
// alternatives), greedy, sampled and with penalties (which sample on the host), whatever else
// the step verified; misuse between the halves gets a clear status.
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "support/c_api.hpp"

using namespace gptoss::test;

namespace {

struct SpecDeleter {
  void operator()(gptoss_speculator* s) const { gptoss_speculator_release(s); }
};
using SpecPtr = std::unique_ptr<gptoss_speculator, SpecDeleter>;

SpecPtr make_speculator(uint32_t max_draft) {
  gptoss_speculator_options o;
  gptoss_speculator_options_init(&o);
  o.max_draft = max_draft;
  // Drafts in as many steps as acceptance allows, to test how they are verified together; the
  // cost bound would hold most back on this tiny model.
  o.cost_bound = 0;
  gptoss_speculator_t s = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_speculator_create(&o, &s));
  return SpecPtr(s);
}

struct Sampling {
  float temperature;
  float frequency_penalty;  // negative: random weights repeat themselves, drafts are kept
  uint64_t seed;
};

SamplerPtr make(const Sampling& s) {
  gptoss_sampler_options so;
  gptoss_sampler_options_init(&so);
  so.temperature = s.temperature;
  so.frequency_penalty = s.frequency_penalty;
  so.seed = s.seed;
  so.top_logprobs = 3;
  gptoss_sampler_t out = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_sampler_create(&so, &out));
  return SamplerPtr(out);
}

// One token with what plain decoding records for it.
struct Token {
  uint32_t id;
  gptoss_token_logprob chosen;
  std::vector<gptoss_token_logprob> top;
  bool operator==(const Token& o) const {
    if (id != o.id || chosen.token != o.chosen.token || chosen.logprob != o.chosen.logprob ||
        top.size() != o.top.size())
      return false;
    for (size_t i = 0; i < top.size(); ++i)
      if (top[i].token != o.top[i].token || top[i].logprob != o.top[i].logprob) return false;
    return true;
  }
};

std::vector<Token> plain(gptoss_model_t m, const std::vector<uint32_t>& prompt, const Sampling& s,
                         size_t n) {
  auto c = make_context(m, 1024);
  auto sampler = make(s);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), prompt.size(), prompt.data()));
  std::vector<Token> out;
  for (size_t i = 0; i < n; ++i) {
    Token t{};
    GPTOSS_REQUIRE_OK(gptoss_context_sample(c.get(), sampler.get(), &t.id));
    t.top.resize(3);
    size_t k = 0;
    GPTOSS_REQUIRE_OK(
        gptoss_sampler_get_last_logprobs(sampler.get(), &t.chosen, t.top.data(), 3, &k));
    t.top.resize(k);
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), 1, &t.id));
    out.push_back(t);
  }
  return out;
}

struct Sequence {
  ContextPtr ctx;
  SamplerPtr sampler;
  SpecPtr spec;
  std::vector<Token> out;
};

}  // namespace

TEST_CASE("speculator halves: several sequences' drafts verified in one batched step",
          "[speculative][api]") {
  const uint32_t seed = std::random_device{}();
  std::printf("speculator_batch_test: fresh seed %u\n", seed);
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  auto model = load_conformance_model(Format::hf, 0, gptoss_precision_fast);
  const KvPtr kv = make_pool(model.get(), 4096, 4);

  const std::vector<uint32_t> text = prompt_ids("p3_long");
  const size_t n = 48;
  std::vector<std::vector<uint32_t>> prompts;
  std::vector<Sampling> samplings;
  for (size_t i = 0; i < 4; ++i) {
    // The first two prompts say a piece twice, so that prompt lookup drafts for both in the
    // first step whatever the seed: a step always verifies several sequences' drafts.
    const size_t at = rng() % 40, len = i < 2 ? 4 + rng() % 20 : 8 + rng() % 40;
    prompts.emplace_back(text.begin() + std::ptrdiff_t(at),
                         text.begin() + std::ptrdiff_t(at + len));
    if (i < 2) {
      const std::vector<uint32_t> piece = prompts.back();
      prompts.back().insert(prompts.back().end(), piece.begin(), piece.end());
    }
    samplings.push_back({i % 2 == 0 ? 0.0f : 1.0f, i < 3 ? -1.5f : 0.0f, rng()});
  }
  std::vector<Sequence> seqs(4);
  for (size_t i = 0; i < 4; ++i) {
    seqs[i].ctx = make_context(model.get(), 1024, 64, kv.get());
    seqs[i].sampler = make(samplings[i]);
    seqs[i].spec = make_speculator(6);
    GPTOSS_REQUIRE_OK(
        gptoss_context_append_tokens(seqs[i].ctx.get(), prompts[i].size(), prompts[i].data()));
  }
  size_t drafted_steps = 0;
  while (seqs[0].out.size() < n || seqs[1].out.size() < n || seqs[2].out.size() < n ||
         seqs[3].out.size() < n) {
    std::vector<gptoss_context_t> batch;
    std::vector<size_t> drafts(4, 0);
    for (size_t i = 0; i < 4; ++i) {
      if (seqs[i].out.size() >= n) continue;
      const size_t capacity = std::min<size_t>(7, n - seqs[i].out.size());
      GPTOSS_REQUIRE_OK(gptoss_speculator_draft(seqs[i].spec.get(), seqs[i].ctx.get(),
                                                seqs[i].sampler.get(), nullptr, capacity,
                                                &drafts[i]));
      REQUIRE(drafts[i] + 1 <= capacity);
      batch.push_back(seqs[i].ctx.get());
    }
    drafted_steps +=
        std::count_if(drafts.begin(), drafts.end(), [](size_t d) { return d > 0; }) > 1;
    GPTOSS_REQUIRE_OK(gptoss_contexts_process(batch.data(), batch.size()));
    for (size_t i = 0; i < 4; ++i) {
      if (seqs[i].out.size() >= n) continue;
      std::vector<uint32_t> got(drafts[i] + 1);
      size_t k = 0;
      GPTOSS_REQUIRE_OK(gptoss_speculator_verify(seqs[i].spec.get(), seqs[i].ctx.get(),
                                                 seqs[i].sampler.get(), nullptr, got.data(),
                                                 got.size(), &k));
      REQUIRE(k >= 1);
      for (size_t j = 0; j < k; ++j) {
        Token t{got[j], {}, std::vector<gptoss_token_logprob>(3)};
        size_t top = 0;
        GPTOSS_REQUIRE_OK(gptoss_speculator_get_logprobs(seqs[i].spec.get(), j, &t.chosen,
                                                         t.top.data(), 3, &top));
        t.top.resize(top);
        seqs[i].out.push_back(t);
      }
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(seqs[i].ctx.get(), 1, &got[k - 1]));
    }
  }
  size_t accepted = 0;
  for (size_t i = 0; i < 4; ++i) {
    INFO("sequence " << i << ", temperature " << samplings[i].temperature << ", frequency penalty "
                     << samplings[i].frequency_penalty);
    gptoss_speculator_stats st{};
    st.struct_size = sizeof st;
    GPTOSS_REQUIRE_OK(gptoss_speculator_get_stats(seqs[i].spec.get(), &st));
    accepted += st.accepted;
    seqs[i].out.resize(n);
    const std::vector<Token> want = plain(model.get(), prompts[i], samplings[i], n);
    for (size_t j = 0; j < n; ++j) {
      INFO("token " << j);
      REQUIRE(seqs[i].out[j] == want[j]);
    }
  }
  CHECK(accepted > 0);
  CHECK(drafted_steps > 0);  // steps where several sequences' drafts were verified together
}

TEST_CASE("speculator halves: misuse between draft and verify gets a clear status",
          "[speculative][api][bad-input]") {
  auto model = load_conformance_model(Format::hf, 0, gptoss_precision_fast);
  const std::vector<uint32_t> text = prompt_ids("p3_long");
  auto ctx = make_context(model.get(), 1024, 64);
  auto sampler = make({0.0f, -1.5f, 1});
  auto spec = make_speculator(6);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(ctx.get(), 40, text.data()));
  uint32_t out[8];
  size_t n = 0;
  CHECK(gptoss_speculator_verify(spec.get(), ctx.get(), sampler.get(), nullptr, out, 8, &n) ==
        gptoss_status_invalid_state);  // nothing drafted
  CHECK(gptoss_speculator_draft(spec.get(), ctx.get(), sampler.get(), nullptr, 0, &n) ==
        gptoss_status_invalid_argument);
  CHECK(gptoss_speculator_draft(nullptr, ctx.get(), sampler.get(), nullptr, 4, &n) ==
        gptoss_status_invalid_argument);
  // Decode until a draft is proposed (the prompt repeats tokens, so prompt lookup finds one).
  size_t drafted = 0;
  for (int step = 0; step < 40 && drafted == 0; ++step) {
    GPTOSS_REQUIRE_OK(
        gptoss_speculator_draft(spec.get(), ctx.get(), sampler.get(), nullptr, 8, &drafted));
    if (drafted > 0) break;
    GPTOSS_REQUIRE_OK(
        gptoss_speculator_verify(spec.get(), ctx.get(), sampler.get(), nullptr, out, 8, &n));
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(ctx.get(), 1, &out[n - 1]));
  }
  REQUIRE(drafted > 0);
  size_t again = 0;
  CHECK(gptoss_speculator_draft(spec.get(), ctx.get(), sampler.get(), nullptr, 8, &again) ==
        gptoss_status_invalid_state);  // a draft is pending
  n = 0;
  CHECK(gptoss_speculator_verify(spec.get(), ctx.get(), sampler.get(), nullptr, out, drafted, &n) ==
        gptoss_status_buffer_too_small);
  CHECK(n == drafted + 1);
  // Abandoned (the step that would verify it failed): out of the context, and forgotten.
  size_t tokens = 0;
  GPTOSS_REQUIRE_OK(gptoss_context_get_num_tokens(ctx.get(), &tokens));
  GPTOSS_REQUIRE_OK(gptoss_speculator_abandon_draft(spec.get(), ctx.get()));
  size_t after = 0;
  GPTOSS_REQUIRE_OK(gptoss_context_get_num_tokens(ctx.get(), &after));
  CHECK(after == tokens - drafted);
  CHECK(gptoss_speculator_abandon_draft(spec.get(), nullptr) == gptoss_status_invalid_argument);
  GPTOSS_REQUIRE_OK(
      gptoss_speculator_draft(spec.get(), ctx.get(), sampler.get(), nullptr, 8, &drafted));
  // A context appended to between the halves is refused, not verified on stale logits.
  if (drafted > 0) {
    const uint32_t extra = 7;
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(ctx.get(), 1, &extra));
    CHECK(gptoss_speculator_verify(spec.get(), ctx.get(), sampler.get(), nullptr, out, 8, &n) ==
          gptoss_status_invalid_state);
  }
  CHECK(gptoss_speculator_get_logprobs(spec.get(), 99, nullptr, nullptr, 0, nullptr) ==
        gptoss_status_invalid_argument);
}
