// Self-consistency of the forward pass through the C API: prefill vs decode, batching,
// both loaders, truncation, partial models, bf16 KV.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "support/c_api.hpp"
#include "support/cpu_levels.hpp"

using namespace gptoss::test;

// The CPU backend's forward pass is batch-invariant (docs/architecture.md, "Determinism";
// tests/runtime/batch_invariance_test.cpp): there the checks below are bit equality. The strict
// test devices (GPTOSS_TEST_BACKEND) keep the bound each check states.
static double bound(double other_backends) {
  return std::string(test_backend()) == "cpu" ? 0.0 : other_backends;
}

static void check_prefill_equals_decode(gptoss_precision precision, double tolerance) {
  auto model = load_conformance_model(Format::hf, 0, precision);
  const auto ids = prompt_ids("p3_long");  // 300 tokens: crosses the 128 window twice
  auto prefill = make_context(model.get(), 512, 64);  // several chunks of 64
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(prefill.get(), ids.size(), ids.data()));
  GPTOSS_REQUIRE_OK(gptoss_context_process(prefill.get()));
  auto decode = make_context(model.get(), 512);
  for (uint32_t t : ids) {
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(decode.get(), 1, &t));
    GPTOSS_REQUIRE_OK(gptoss_context_process(decode.get()));
  }
  const auto a = logits_of(prefill.get()), b = logits_of(decode.get());
  CHECK(max_abs_diff(a, b) <= tolerance);
  CHECK(std::max_element(a.begin(), a.end()) - a.begin() == std::max_element(b.begin(), b.end()) - b.begin());
}

TEST_CASE("prefill of a whole prompt equals token-by-token decode", "[runtime]") {
  check_prefill_equals_decode(gptoss_precision_exact, bound(1e-4));
}

// Elsewhere than on the CPU backend: in the fast mode each token's activations are rounded to
// int8 steps; a 1e-7 difference in fp32 summation order (GEMM vs GEMV) can move a value across
// a step boundary, and through 4 layers of this small random model that shows as up to ~1e-2 in
// a logit (llama.cpp has the same property).
TEST_CASE("fast precision: prefill and decode agree", "[runtime]") {
  check_prefill_equals_decode(gptoss_precision_fast, bound(0.05));
}

// Batched and alone must agree: bit for bit on the CPU backend (every level); elsewhere
// within float rounding.
static void check_batch_equals_alone(double tolerance,
                                     gptoss_precision precision = gptoss_precision_exact) {
  auto model = load_conformance_model(Format::hf, 0, precision);
  const std::vector<std::vector<uint32_t>> prompts = {prompt_ids("p1_short"), prompt_ids("p2_harmony"),
                                                      prompt_ids("p3_long")};
  std::vector<std::vector<float>> alone;
  for (const auto& p : prompts) {
    auto c = make_context(model.get(), 400);
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), p.size(), p.data()));
    GPTOSS_REQUIRE_OK(gptoss_context_process(c.get()));
    alone.push_back(logits_of(c.get()));
  }
  // Shared pool and private pools, and a context with a small chunk size in the mix.
  const KvPtr kv = make_pool(model.get(), 1024, 3);
  for (bool shared : {true, false}) {
    std::vector<ContextPtr> ctxs;
    std::vector<gptoss_context_t> raw;
    for (size_t i = 0; i < prompts.size(); ++i) {
      ctxs.push_back(make_context(model.get(), 400, i == 2 ? 100 : 512, shared ? kv.get() : nullptr));
      raw.push_back(ctxs.back().get());
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(raw[i], prompts[i].size(), prompts[i].data()));
    }
    GPTOSS_REQUIRE_OK(gptoss_contexts_process(raw.data(), raw.size()));
    for (size_t i = 0; i < prompts.size(); ++i) {
      INFO("prompt " << i << (shared ? " shared pool" : " private pools"));
      CHECK(max_abs_diff(logits_of(raw[i]), alone[i]) <= tolerance);
    }
  }
}

TEST_CASE("a batch of 3 contexts equals processing each alone", "[runtime]") {
  check_batch_equals_alone(bound(1e-5));
}

TEST_CASE("fast precision: a batch of 3 contexts agrees with each alone", "[runtime]") {
  check_batch_equals_alone(bound(0.05), gptoss_precision_fast);  // see the fast prefill/decode test
}

TEST_CASE("with the scalar reference kernels a batch is bit-identical to each alone", "[runtime]") {
  ScopedCpuLevel scalar("scalar");
  check_batch_equals_alone(0.0);
}

TEST_CASE("HF and GGUF checkpoints of the same weights give identical logits", "[runtime]") {
  auto hf = load_conformance_model(Format::hf);
  auto gguf = load_conformance_model(Format::gguf);
  const auto ids = prompt_ids("p2_harmony");
  std::vector<float> out[2];
  int i = 0;
  for (auto* m : {hf.get(), gguf.get()}) {
    auto c = make_context(m, 128);
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), ids.size(), ids.data()));
    GPTOSS_REQUIRE_OK(gptoss_context_process(c.get()));
    out[i++] = logits_of(c.get());
  }
  CHECK(max_abs_diff(out[0], out[1]) == 0.0);
}

TEST_CASE("greedy generation is deterministic and sampling is seeded", "[runtime]") {
  auto model = load_conformance_model();
  const auto ids = prompt_ids("p1_short");
  auto generate = [&](float temperature, uint64_t seed) {
    SamplerPtr sampler = make_sampler(temperature, seed);
    auto c = make_context(model.get(), 64);
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), ids.size(), ids.data()));
    std::vector<uint32_t> out;
    for (int i = 0; i < 12; ++i) {
      uint32_t t = 0;
      GPTOSS_REQUIRE_OK(gptoss_context_sample(c.get(), sampler.get(), &t));
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), 1, &t));
      out.push_back(t);
    }
    return out;
  };
  CHECK(generate(0.0f, 1) == generate(0.0f, 2));
  CHECK(generate(1.0f, 7) == generate(1.0f, 7));
  CHECK(generate(1.0f, 7) != generate(1.0f, 8));  // random weights: a flat distribution
}

// After truncate(keep) a context (processed in chunks of 32) must continue as a fresh context
// given the first `keep` tokens at once. The two reach position keep - 1 through differently
// sized steps, so they agree bit for bit where every kernel is batch-invariant: the CPU
// backend at every level. That checks the truncation itself (kept and released KV,
// sliding-window keys recomputed when gone) exactly. Elsewhere, in fast precision, steps of
// different sizes round differently (see the fast prefill/decode test): within that test's
// bound.
static void check_truncate(double tolerance, gptoss_precision precision) {
  auto model = load_conformance_model(Format::hf, 0, precision);
  const auto ids = prompt_ids("p3_long");
  auto fresh_logits = [&](size_t n) {
    auto c = make_context(model.get(), 512);
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), n, ids.data()));
    GPTOSS_REQUIRE_OK(gptoss_context_process(c.get()));
    return logits_of(c.get());
  };
  auto c = make_context(model.get(), 512, 32);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), ids.size(), ids.data()));
  GPTOSS_REQUIRE_OK(gptoss_context_process(c.get()));
  // Near the end: sliding-window keys still held. Far back: they were released and must be
  // recomputed.
  for (size_t keep : {290u, 200u, 20u}) {
    INFO("keep " << keep);
    GPTOSS_REQUIRE_OK(gptoss_context_truncate(c.get(), keep));
    size_t n = 0;
    GPTOSS_REQUIRE_OK(gptoss_context_get_num_tokens(c.get(), &n));
    CHECK(n == keep);
    float dummy;
    CHECK(gptoss_context_get_logits(c.get(), &dummy, 1, &n) == gptoss_status_invalid_state);
    GPTOSS_REQUIRE_OK(gptoss_context_process(c.get()));
    CHECK(max_abs_diff(logits_of(c.get()), fresh_logits(keep)) <= tolerance);
  }
  CHECK(gptoss_context_truncate(c.get(), 1000) == gptoss_status_invalid_argument);
}

TEST_CASE("truncate keeps a prefix and continues exactly as a fresh context", "[runtime]") {
  {
    ScopedCpuLevel scalar("scalar");
    check_truncate(0.0, gptoss_precision_exact);
  }
  if (std::string(test_backend()) == "cpu")
    check_truncate(0.0, gptoss_precision_exact);  // every level
}

TEST_CASE("fast precision: truncate continues as a fresh context", "[runtime]") {
  check_truncate(bound(0.05), gptoss_precision_fast);
}

TEST_CASE("bf16 KV cache stays close to f32", "[runtime]") {
  auto model = load_conformance_model();
  const auto ids = prompt_ids("p3_long");
  std::vector<float> out[2];
  for (int i = 0; i < 2; ++i) {
    auto c = make_context(model.get(), 512, 512, nullptr, i ? gptoss_kv_dtype_bf16 : gptoss_kv_dtype_f32);
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), ids.size(), ids.data()));
    GPTOSS_REQUIRE_OK(gptoss_context_process(c.get()));
    out[i] = logits_of(c.get());
  }
  // This random model is sensitive (a rounded key can flip a router choice), so the bound is
  // the one llama.cpp's f16 cache meets on the same prompt (manifest: mean |d| 0.056).
  double sum = 0;
  for (size_t i = 0; i < out[0].size(); ++i) sum += std::abs(out[0][i] - out[1][i]);
  const double mean = sum / double(out[0].size());
  CHECK(max_abs_diff(out[0], out[1]) > 0.0);  // it really is a different cache
  CHECK(mean < 0.056);
}

TEST_CASE("a partial model uses only the first layers", "[runtime]") {
  auto full = load_conformance_model(Format::hf, 0);
  auto two = load_conformance_model(Format::hf, 2);
  gptoss_model_info info{};
  info.struct_size = sizeof(info);
  GPTOSS_REQUIRE_OK(gptoss_model_get_info(two.get(), &info));
  CHECK(info.num_layers == 2);
  CHECK(info.num_layers_total == 4);
  const auto ids = prompt_ids("p1_short");
  std::vector<float> out[2];
  int i = 0;
  for (auto* m : {full.get(), two.get()}) {
    auto c = make_context(m, 32);
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), ids.size(), ids.data()));
    GPTOSS_REQUIRE_OK(gptoss_context_process(c.get()));
    out[i++] = logits_of(c.get());
  }
  CHECK(max_abs_diff(out[0], out[1]) > 1e-3);
  gptoss_model_options o;
  gptoss_model_options_init(&o);
  o.num_layers = 5;
  const std::string path = logits_dir() + "/model.gguf";
  gptoss_model_t m = nullptr;
  CHECK(gptoss_model_create_with_options(path.c_str(), &o, &m) == gptoss_status_invalid_argument);
  CHECK(m == nullptr);
}
