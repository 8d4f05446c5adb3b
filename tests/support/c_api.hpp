#pragma once
// RAII helpers over the C API for tests, and loaders of the shared conformance model.
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "gptoss.h"
#include "support/paths.hpp"

namespace gptoss::test {

#define GPTOSS_REQUIRE_OK(call)                                                        \
  do {                                                                                 \
    const gptoss_status st_ = (call);                                                  \
    INFO(#call << " -> " << gptoss_status_to_string(st_) << ": "                        \
               << gptoss_get_last_error_message());                                    \
    REQUIRE(st_ == gptoss_status_success);                                             \
  } while (0)

// The calling thread's last error message, as a std::string (for INFO and CHECK).
inline std::string last_error() { return gptoss_get_last_error_message(); }

struct ModelDeleter { void operator()(gptoss_model* m) const { gptoss_model_release(m); } };
struct ContextDeleter { void operator()(gptoss_context* c) const { gptoss_context_release(c); } };
struct SamplerDeleter { void operator()(gptoss_sampler* s) const { gptoss_sampler_release(s); } };
struct KvDeleter { void operator()(gptoss_kvcache* k) const { gptoss_kvcache_release(k); } };
using ModelPtr = std::unique_ptr<gptoss_model, ModelDeleter>;
using ContextPtr = std::unique_ptr<gptoss_context, ContextDeleter>;
using SamplerPtr = std::unique_ptr<gptoss_sampler, SamplerDeleter>;
using KvPtr = std::unique_ptr<gptoss_kvcache, KvDeleter>;

enum class Format { hf, gguf };

// The backend the model tests run on: "cpu", or GPTOSS_TEST_BACKEND (tests/CMakeLists.txt
// runs the forward-pass, batching and KV tests again on "strict" and "strict-minimal"). Tests
// tagged [fixed-device] pick their device themselves or load no model, and that second run
// leaves them out: one that comes here fails, so the tag cannot hide a test from it.
const char* test_backend();

// The library's default precision is fast (int8 activations where the CPU has VNNI); tests
// with fp32-rounding tolerances ask for exact. `backend` NULL: test_backend().
inline ModelPtr load_conformance_model(Format f = Format::hf, uint32_t num_layers = 0,
                                       gptoss_precision precision = gptoss_precision_fast,
                                       const char* backend = nullptr) {
  gptoss_model_options o;
  gptoss_model_options_init(&o);
  o.backend = backend ? backend : test_backend();
  o.num_layers = num_layers;
  o.precision = precision;
  const std::string tok = tokenizer_json();
  std::string path = f == Format::hf ? conformance_hf_dir() : logits_dir() + "/model.gguf";
  if (f == Format::hf) o.tokenizer_path = tok.c_str();
  gptoss_model_t m = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_model_create_with_options(path.c_str(), &o, &m));
  return ModelPtr(m);
}

// A KV pool of `tokens` tokens that up to `sequences` contexts share.
inline KvPtr make_pool(gptoss_model_t m, size_t tokens, size_t sequences = 8,
                       gptoss_kv_dtype dtype = gptoss_kv_dtype_f32) {
  gptoss_kvcache_options ko;
  GPTOSS_REQUIRE_OK(gptoss_kvcache_options_init(&ko));
  ko.capacity_tokens = tokens;
  ko.max_sequences = sequences;
  ko.dtype = dtype;
  gptoss_kvcache_t kv = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_kvcache_create(m, &ko, &kv));
  return KvPtr(kv);
}

inline ContextPtr make_context(gptoss_model_t m, size_t length, size_t max_batch = 512,
                               gptoss_kvcache_t kv = nullptr,
                               gptoss_kv_dtype dtype = gptoss_kv_dtype_f32) {
  gptoss_context_options o;
  gptoss_context_options_init(&o);
  o.context_length = length;
  o.max_batch_tokens = max_batch;
  o.kvcache = kv;
  o.kv_dtype = dtype;
  gptoss_context_t c = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_context_create_with_options(m, &o, &c));
  return ContextPtr(c);
}

inline SamplerPtr make_sampler(float temperature, uint64_t seed, uint32_t top_k = 0,
                               float top_p = 1.0f, float min_p = 0.0f) {
  gptoss_sampler_options so;
  gptoss_sampler_options_init(&so);
  so.temperature = temperature;
  so.seed = seed;
  so.top_k = top_k;
  so.top_p = top_p;
  so.min_p = min_p;
  gptoss_sampler_t s = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_sampler_create(&so, &s));
  return SamplerPtr(s);
}

inline std::vector<float> logits_of(gptoss_context_t c) {
  std::vector<float> v(201088);
  size_t n = 0;
  GPTOSS_REQUIRE_OK(gptoss_context_get_logits(c, v.data(), v.size(), &n));
  v.resize(n);
  return v;
}

// Token ids of the shared prompt `name` (p1_short, p2_harmony, p3_long).
std::vector<uint32_t> prompt_ids(const std::string& name);

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::abs(a[i] - b[i])));
  return m;
}

}  // namespace gptoss::test
