#pragma once
// What the batch-invariance tests share (batch_invariance_test.cpp on the conformance model,
// batch_invariance_fresh_test.cpp on models generated from fresh seeds): the configurations,
// seeds, random prompts, bit comparison, and a sequence's logits run alone.
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "support/c_api.hpp"
#include "support/sanitized.hpp"

namespace gptoss::test::invariance {

struct Config {
  gptoss_precision precision;
  gptoss_kv_dtype kv;
};
constexpr Config kConfigs[] = {{gptoss_precision_exact, gptoss_kv_dtype_f32},
                               {gptoss_precision_exact, gptoss_kv_dtype_bf16},
                               {gptoss_precision_fast, gptoss_kv_dtype_f32},
                               {gptoss_precision_fast, gptoss_kv_dtype_bf16}};

inline uint64_t fresh_seed() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) | rd();
}

// The configurations a run checks: all four, except at the scalar kernel level (eight times
// slower than the vector levels; its kernels compute every row alone in one order by
// construction) and in the sanitized build (its runs check memory): there each precision once,
// with a KV dtype drawn fresh for the run (from GPTOSS_TEST_SEED when it replays one), so CI
// covers both dtypes over its runs.
inline std::vector<Config> configs() {
  const char* isa = std::getenv("GPTOSS_CPU_ISA");
  const bool reduced = kSanitized || (isa != nullptr && std::strcmp(isa, "scalar") == 0);
  if (!reduced) return {std::begin(kConfigs), std::end(kConfigs)};
  const char* replay = std::getenv("GPTOSS_TEST_SEED");
  static const uint64_t draw =
      replay != nullptr && *replay != '\0' ? std::strtoull(replay, nullptr, 10) >> 8 : fresh_seed();
  std::vector<Config> out;
  for (size_t p = 0; p < 2; ++p) out.push_back(kConfigs[2 * p + ((draw >> p) & 1)]);
  return out;
}

// Token ids below `vocab`, and below the special tokens of the full vocabulary.
inline std::vector<uint32_t> random_tokens(std::mt19937_64& rng, size_t n,
                                           uint32_t vocab = 201088) {
  std::uniform_int_distribution<uint32_t> id(0, (vocab < 199998 ? vocab : 199998) - 1);
  std::vector<uint32_t> out(n);
  for (auto& t : out) t = id(rng);
  return out;
}

// Bit equality, with what differs said on failure.
inline void require_same_bits(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  if (std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0) return;
  size_t first = 0, n = 0;
  for (size_t i = got.size(); i-- > 0;)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) first = i, ++n;
  FAIL(n << " of " << got.size() << " logits differ (first at " << first << ": " << got[first]
         << " vs " << want[first] << ", max |d| " << max_abs_diff(got, want) << ")");
}

inline std::string describe(const Config& c) {
  return std::string(c.precision == gptoss_precision_fast ? "fast" : "exact") +
         (c.kv == gptoss_kv_dtype_bf16 ? ", bf16 KV" : ", f32 KV");
}

// The logits after each of `steps` (the first: the prompt; then one token each), the sequence
// alone in its own context, its prompt processed whole.
inline std::vector<std::vector<float>> run_alone(gptoss_model_t m, const Config& c,
                                                 const std::vector<std::vector<uint32_t>>& steps) {
  size_t total = 0;
  for (const auto& s : steps) total += s.size();
  auto ctx = make_context(m, total + 16, 1024, nullptr, c.kv);
  std::vector<std::vector<float>> out;
  for (const auto& s : steps) {
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(ctx.get(), s.size(), s.data()));
    GPTOSS_REQUIRE_OK(gptoss_context_process(ctx.get()));
    out.push_back(logits_of(ctx.get()));
  }
  return out;
}

// Our steps run beside others' (theirs[i][s]: sequence i's tokens at step s), every context of
// `capacity` tokens on one shared pool: our logits after each step must be bit for bit those of
// `ours` run alone.
inline void require_same_in_company(gptoss_model_t m, const Config& c,
                                    const std::vector<std::vector<uint32_t>>& ours,
                                    const std::vector<std::vector<std::vector<uint32_t>>>& theirs,
                                    size_t capacity) {
  const auto alone = run_alone(m, c, ours);
  const size_t others = theirs.size();
  auto pool = make_pool(m, (others + 1) * capacity, others + 1, c.kv);
  std::vector<ContextPtr> ctxs;
  std::vector<gptoss_context_t> raw;
  for (size_t i = 0; i <= others; ++i) {
    ctxs.push_back(make_context(m, capacity, 1024, pool.get(), c.kv));
    raw.push_back(ctxs.back().get());
  }
  for (size_t s = 0; s < ours.size(); ++s) {
    INFO("step " << s);
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(raw[0], ours[s].size(), ours[s].data()));
    for (size_t i = 0; i < others; ++i)
      GPTOSS_REQUIRE_OK(
          gptoss_context_append_tokens(raw[i + 1], theirs[i][s].size(), theirs[i][s].data()));
    GPTOSS_REQUIRE_OK(gptoss_contexts_process(raw.data(), raw.size()));
    require_same_bits(logits_of(raw[0]), alone[s]);
  }
}

}  // namespace gptoss::test::invariance
