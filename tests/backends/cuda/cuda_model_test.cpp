// The CUDA backend through the C API, on the shared conformance model: what it promises
// beyond the core's own tests (which ctest also runs on cuda: cuda.runtime), bit-for-bit
// batch invariance (docs/backends.md, "Which kernels run"). Hidden tests (tag [cuda-gpu]): ctest
// runs them as `cuda.model` where gptoss-cuda-info finds a GPU, and skips them elsewhere; by hand:
// build/bin/gptoss-tests "[cuda-gpu]".
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "support/c_api.hpp"

using namespace gptoss::test;

namespace {

ModelPtr cuda_model(gptoss_precision precision) {
  return load_conformance_model(Format::hf, 0, precision, "cuda");
}

// Decodes `steps` fixed tokens after three different prompts, the three contexts either
// processed together in each step or one after another; returns every step's logits.
std::vector<std::vector<float>> decode_three(gptoss_model_t model, bool together, gptoss_kv_dtype dtype) {
  const std::vector<std::vector<uint32_t>> prompts = {prompt_ids("p1_short"), prompt_ids("p2_harmony"),
                                                      prompt_ids("p3_long")};
  gptoss_kvcache_options ko;
  gptoss_kvcache_options_init(&ko);
  ko.capacity_tokens = 1024;
  ko.max_sequences = 3;
  ko.dtype = dtype;
  gptoss_kvcache_t kv_raw = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_kvcache_create(model, &ko, &kv_raw));
  KvPtr kv(kv_raw);
  std::vector<ContextPtr> ctxs;
  std::vector<gptoss_context_t> raw;
  for (const auto& p : prompts) {  // prefilled alone in both arms: the same arithmetic
    ctxs.push_back(make_context(model, 400, 512, kv.get(), dtype));
    raw.push_back(ctxs.back().get());
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(raw.back(), p.size(), p.data()));
    GPTOSS_REQUIRE_OK(gptoss_context_process(raw.back()));
  }
  std::vector<std::vector<float>> out;
  for (uint32_t step = 0; step < 12; ++step) {
    for (size_t i = 0; i < raw.size(); ++i) {
      const uint32_t tok = 1000 + 97 * step + 13 * uint32_t(i);
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(raw[i], 1, &tok));
      if (!together) GPTOSS_REQUIRE_OK(gptoss_context_process(raw[i]));
    }
    if (together) GPTOSS_REQUIRE_OK(gptoss_contexts_process(raw.data(), raw.size()));
    for (gptoss_context_t c : raw) out.push_back(logits_of(c));
  }
  return out;
}

enum class Arm {
  alone,          // each context's calls hold only its own tokens: prompt whole, then 1 a step
  together,       // every context in each call: a 2,000-token prefill, then decode steps of 10
  token_by_token  // as alone, but each prompt fed one token per call
};

// Prompts, then `steps` decode tokens, for each context; returns every context's logits after
// its prompt and after each step, context by context.
std::vector<std::vector<float>> run_contexts(gptoss_model_t model,
                                             const std::vector<std::vector<uint32_t>>& prompts,
                                             Arm arm, gptoss_kv_dtype dtype, uint32_t steps) {
  gptoss_kvcache_options ko;
  gptoss_kvcache_options_init(&ko);
  ko.capacity_tokens = 4096;
  ko.max_sequences = uint32_t(prompts.size());
  ko.dtype = dtype;
  gptoss_kvcache_t kv_raw = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_kvcache_create(model, &ko, &kv_raw));
  KvPtr kv(kv_raw);
  std::vector<ContextPtr> ctxs;
  std::vector<gptoss_context_t> raw;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ctxs.push_back(make_context(model, 400, 512, kv.get(), dtype));
    raw.push_back(ctxs.back().get());
  }
  std::vector<std::vector<std::vector<float>>> logits(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (arm == Arm::token_by_token) {
      for (uint32_t tok : prompts[i]) {
        GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(raw[i], 1, &tok));
        GPTOSS_REQUIRE_OK(gptoss_context_process(raw[i]));
      }
    } else {
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(raw[i], prompts[i].size(), prompts[i].data()));
      if (arm == Arm::alone) GPTOSS_REQUIRE_OK(gptoss_context_process(raw[i]));
    }
  }
  if (arm == Arm::together) GPTOSS_REQUIRE_OK(gptoss_contexts_process(raw.data(), raw.size()));
  for (size_t i = 0; i < raw.size(); ++i) logits[i].push_back(logits_of(raw[i]));
  for (uint32_t step = 0; step < steps; ++step) {
    for (size_t i = 0; i < raw.size(); ++i) {
      const uint32_t tok = 1000 + 97 * step + 13 * uint32_t(i);
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(raw[i], 1, &tok));
      if (arm != Arm::together) GPTOSS_REQUIRE_OK(gptoss_context_process(raw[i]));
    }
    if (arm == Arm::together) GPTOSS_REQUIRE_OK(gptoss_contexts_process(raw.data(), raw.size()));
    for (size_t i = 0; i < raw.size(); ++i) logits[i].push_back(logits_of(raw[i]));
  }
  std::vector<std::vector<float>> out;
  for (auto& per_context : logits)
    for (auto& l : per_context) out.push_back(std::move(l));
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

// The batch-invariance guarantee past every size threshold the backend has: 10 contexts (more
// than the 8 tokens up to which kernels were once chosen for decode), prompts of 161 to 300
// tokens (past the 128-key span from which attention splits a token's keys, and across the
// 128-position window), in one 2,000-token call, one prompt per call, or one token per call;
// then decode steps of 10 tokens against steps of 1. Every logit bit for bit.
TEST_CASE("cuda: each token's logits are the same whatever else its calls hold", "[.][cuda-gpu]") {
  const uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint32_t>> prompts(10);
  for (auto& p : prompts) {
    p.resize(161 + rng() % 140);
    for (uint32_t& t : p) t = uint32_t(1000 + rng() % 150000);
  }
  for (gptoss_precision precision : {gptoss_precision_exact, gptoss_precision_fast}) {
    auto model = cuda_model(precision);
    for (gptoss_kv_dtype dtype : {gptoss_kv_dtype_f32, gptoss_kv_dtype_bf16}) {
      INFO("precision " << int(precision) << " kv " << int(dtype));
      const auto alone = run_contexts(model.get(), prompts, Arm::alone, dtype, 6);
      const auto together = run_contexts(model.get(), prompts, Arm::together, dtype, 6);
      REQUIRE(together.size() == alone.size());
      for (size_t i = 0; i < alone.size(); ++i) {
        INFO("context " << i / 7 << ", after " << (i % 7 == 0 ? "its prompt" : "decode step ")
                        << i % 7);
        CHECK(same_bits(together[i], alone[i]));
      }
      // Token by token: two contexts are enough (each call holds one token).
      const std::vector<std::vector<uint32_t>> two(prompts.begin(), prompts.begin() + 2);
      const auto by_token = run_contexts(model.get(), two, Arm::token_by_token, dtype, 1);
      for (size_t i = 0; i < by_token.size(); ++i) {
        INFO("token by token: context " << i / 2 << ", after "
                                        << (i % 2 == 0 ? "its prompt" : "a step"));
        CHECK(same_bits(by_token[i], alone[(i / 2) * 7 + i % 2]));
      }
    }
  }
}

// The kernels give a token the same arithmetic whatever else is in the step (per-token
// accumulators, key splits chosen by the token's own span, absolute-aligned attention
// tiles), so batching decode changes no bit.
TEST_CASE("cuda: batched decode equals one sequence at a time, bit for bit", "[.][cuda-gpu]") {
  for (gptoss_precision precision : {gptoss_precision_exact, gptoss_precision_fast}) {
    for (gptoss_kv_dtype dtype : {gptoss_kv_dtype_f32, gptoss_kv_dtype_bf16}) {
      INFO("precision " << int(precision) << " kv " << int(dtype));
      auto model = cuda_model(precision);
      const auto together = decode_three(model.get(), true, dtype);
      const auto alone = decode_three(model.get(), false, dtype);
      REQUIRE(together.size() == alone.size());
      for (size_t i = 0; i < together.size(); ++i) CHECK(max_abs_diff(together[i], alone[i]) == 0.0);
    }
  }
}

TEST_CASE("cuda: a batch of prompts equals each prompt alone", "[.][cuda-gpu]") {
  // Prefill rows are independent in every kernel (GEMM rows, per-expert tiles, attention
  // rows over absolute tiles), so mixing prompts in one step changes nothing.
  auto model = cuda_model(gptoss_precision_fast);
  const std::vector<std::vector<uint32_t>> prompts = {prompt_ids("p2_harmony"), prompt_ids("p3_long")};
  std::vector<std::vector<float>> alone;
  for (const auto& p : prompts) {
    auto c = make_context(model.get(), 400);
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), p.size(), p.data()));
    GPTOSS_REQUIRE_OK(gptoss_context_process(c.get()));
    alone.push_back(logits_of(c.get()));
  }
  std::vector<ContextPtr> ctxs;
  std::vector<gptoss_context_t> raw;
  for (const auto& p : prompts) {
    ctxs.push_back(make_context(model.get(), 400));
    raw.push_back(ctxs.back().get());
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(raw.back(), p.size(), p.data()));
  }
  GPTOSS_REQUIRE_OK(gptoss_contexts_process(raw.data(), raw.size()));
  for (size_t i = 0; i < prompts.size(); ++i) CHECK(max_abs_diff(logits_of(raw[i]), alone[i]) == 0.0);
}

TEST_CASE("cuda: the model reports the cuda backend and a device", "[.][cuda-gpu]") {
  auto model = cuda_model(gptoss_precision_fast);
  gptoss_model_info info{};
  info.struct_size = sizeof info;
  GPTOSS_REQUIRE_OK(gptoss_model_get_info(model.get(), &info));
  CHECK(std::string(info.backend) == "cuda");
  // Declared with the invariant kernels on (the default), which the test above checks.
  CHECK(info.batch_invariant == 1);
  REQUIRE(info.kernels != nullptr);
  CHECK(std::string(info.kernels).rfind("sm_", 0) == 0);
}
