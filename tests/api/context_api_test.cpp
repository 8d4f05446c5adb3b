// Documented guarantees of the model / kvcache / context C API, including failure paths.
#include <cmath>
#include <cstring>
#include <string>
#include <thread>

#include "support/c_api.hpp"

using namespace gptoss::test;

TEST_CASE("NULL arguments give invalid_argument and a message", "[api][bad-input][fixed-device]") {
  gptoss_model_t m = nullptr;
  CHECK(gptoss_model_create_from_file(nullptr, &m) == gptoss_status_invalid_argument);
  CHECK(std::string(gptoss_get_last_error_message()).find("path") != std::string::npos);
  CHECK(gptoss_model_create_from_file("x", nullptr) == gptoss_status_invalid_argument);
  CHECK(gptoss_context_process(nullptr) == gptoss_status_invalid_argument);
  CHECK(gptoss_context_append_tokens(nullptr, 0, nullptr) == gptoss_status_invalid_argument);
  CHECK((gptoss_model_options_init)(nullptr) == gptoss_status_invalid_argument);
  CHECK(gptoss_contexts_process(nullptr, 0) == gptoss_status_success);
  CHECK(gptoss_contexts_process(nullptr, 2) == gptoss_status_invalid_argument);
  for (auto st : {gptoss_model_release(nullptr), gptoss_context_release(nullptr),
                  gptoss_sampler_release(nullptr), gptoss_kvcache_release(nullptr)})
    CHECK(st == gptoss_status_success);
}

TEST_CASE("options structs are checked by size", "[api][bad-input][fixed-device]") {
  gptoss_model_options o;
  gptoss_model_options_init(&o);
  o.struct_size = 3;
  gptoss_model_t m = nullptr;
  const std::string path = logits_dir() + "/model.gguf";
  CHECK(gptoss_model_create_with_options(path.c_str(), &o, &m) == gptoss_status_invalid_argument);
  CHECK(std::string(gptoss_get_last_error_message()).find("struct_size") != std::string::npos);
  gptoss_model_options_init(&o);
  o.use_mmap = 7;
  CHECK(gptoss_model_create_with_options(path.c_str(), &o, &m) == gptoss_status_invalid_argument);
  gptoss_model_options_init(&o);
  CHECK(o.precision == gptoss_precision_fast);
  o.precision = static_cast<gptoss_precision>(5);
  CHECK(gptoss_model_create_with_options(path.c_str(), &o, &m) == gptoss_status_invalid_argument);
  CHECK(std::string(gptoss_get_last_error_message()).find("precision") != std::string::npos);
  gptoss_model_options_init(&o);
  o.backend = "no-such-backend";
  CHECK(gptoss_model_create_with_options(path.c_str(), &o, &m) == gptoss_status_invalid_argument);
  CHECK(std::string(gptoss_get_last_error_message()).find("no-such-backend") != std::string::npos);
  CHECK(m == nullptr);
}

TEST_CASE("model info, KV sizing and the last-error message", "[api]") {
  auto model = load_conformance_model(Format::gguf);
  gptoss_model_info info{};
  info.struct_size = sizeof(info);
  GPTOSS_REQUIRE_OK(gptoss_model_get_info(model.get(), &info));
  CHECK(info.vocab_size == 201088);
  CHECK(info.hidden_size == 64);
  CHECK(info.num_heads == 8);
  CHECK(info.num_kv_heads == 1);
  CHECK(info.num_experts == 32);
  CHECK(info.num_active_experts == 4);
  CHECK(std::string(info.backend) == test_backend());
  CHECK(std::string(info.format) == "gguf");
  size_t bytes = 0;
  GPTOSS_REQUIRE_OK(gptoss_model_get_kv_bytes_per_token(model.get(), gptoss_kv_dtype_f32, &bytes));
  CHECK(bytes == 2 /* full layers */ * 2 /* K,V */ * 1 * 64 * 4);
  GPTOSS_REQUIRE_OK(gptoss_model_get_kv_bytes_per_token(model.get(), gptoss_kv_dtype_bf16, &bytes));
  CHECK(bytes == 2 * 2 * 1 * 64 * 2);
  CHECK(gptoss_model_get_kv_bytes_per_token(model.get(), gptoss_kv_dtype(9), &bytes) ==
        gptoss_status_invalid_argument);
  // The message is per thread.
  CHECK(gptoss_context_process(nullptr) == gptoss_status_invalid_argument);
  std::string other;
  std::thread([&] { other = gptoss_get_last_error_message(); }).join();
  CHECK(other.empty());
  CHECK(std::string(gptoss_get_last_error_message()).size() > 0);
}

TEST_CASE("context overflow, bad ids and logits state", "[api][bad-input]") {
  auto model = load_conformance_model(Format::gguf);
  auto c = make_context(model.get(), 8);
  std::vector<uint32_t> ten(10, 1);
  CHECK(gptoss_context_append_tokens(c.get(), 10, ten.data()) == gptoss_status_context_overflow);
  size_t n = 99;
  GPTOSS_REQUIRE_OK(gptoss_context_get_num_tokens(c.get(), &n));
  CHECK(n == 0);
  const uint32_t bad = 201088;
  CHECK(gptoss_context_append_tokens(c.get(), 1, &bad) == gptoss_status_invalid_argument);
  float f;
  CHECK(gptoss_context_get_logits(c.get(), &f, 1, &n) == gptoss_status_invalid_state);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), 8, ten.data()));
  GPTOSS_REQUIRE_OK(gptoss_context_process(c.get()));
  CHECK(logits_of(c.get()).size() == 201088);
  const uint32_t one = 1;
  CHECK(gptoss_context_append_tokens(c.get(), 1, &one) == gptoss_status_context_overflow);
  size_t max_tokens = 0;
  GPTOSS_REQUIRE_OK(gptoss_context_get_max_tokens(c.get(), &max_tokens));
  CHECK(max_tokens == 8);
  std::vector<uint32_t> back(3);
  CHECK(gptoss_context_get_tokens(c.get(), back.data(), back.size(), &n) == gptoss_status_buffer_too_small);
  CHECK(n == 8);
  GPTOSS_REQUIRE_OK(gptoss_context_reset(c.get()));
  GPTOSS_REQUIRE_OK(gptoss_context_get_num_tokens(c.get(), &n));
  CHECK(n == 0);
  gptoss_context_t big = nullptr;
  CHECK(gptoss_context_create(model.get(), size_t(1) << 40, &big) == gptoss_status_invalid_argument);
  CHECK(big == nullptr);
}

TEST_CASE("a shared KV pool runs out with insufficient_resources and recovers", "[api][bad-input]") {
  auto model = load_conformance_model(Format::gguf);
  gptoss_kvcache_options ko;
  gptoss_kvcache_options_init(&ko);
  ko.capacity_tokens = 48;  // three pages
  ko.max_sequences = 2;
  gptoss_kvcache_t raw = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_kvcache_create(model.get(), &ko, &raw));
  KvPtr kv(raw);
  size_t free_tokens = 0;
  GPTOSS_REQUIRE_OK(gptoss_kvcache_get_free_tokens(kv.get(), &free_tokens));
  CHECK(free_tokens == 48);
  const auto ids = prompt_ids("p3_long");
  auto a = make_context(model.get(), 64, 512, kv.get());
  auto b = make_context(model.get(), 64, 512, kv.get());
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(a.get(), 40, ids.data()));
  GPTOSS_REQUIRE_OK(gptoss_context_process(a.get()));
  GPTOSS_REQUIRE_OK(gptoss_kvcache_get_free_tokens(kv.get(), &free_tokens));
  CHECK(free_tokens == 0);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(b.get(), 10, ids.data()));
  CHECK(gptoss_context_process(b.get()) == gptoss_status_insufficient_resources);
  size_t processed = 1;
  GPTOSS_REQUIRE_OK(gptoss_context_get_num_processed_tokens(b.get(), &processed));
  CHECK(processed == 0);
  GPTOSS_REQUIRE_OK(gptoss_context_reset(a.get()));
  GPTOSS_REQUIRE_OK(gptoss_context_process(b.get()));
  CHECK(logits_of(b.get()).size() == 201088);
  gptoss_kvcache_options_init(&ko);
  ko.capacity_tokens = 0;
  gptoss_kvcache_t none = nullptr;
  CHECK(gptoss_kvcache_create(model.get(), &ko, &none) == gptoss_status_invalid_argument);
}

TEST_CASE("a context keeps its model alive; the log callback receives messages", "[api]") {
  static std::vector<std::string> messages;
  messages.clear();
  GPTOSS_REQUIRE_OK(gptoss_set_log_callback(
      [](gptoss_log_level, const char* msg, void*) { messages.emplace_back(msg); },
      gptoss_log_level_debug, nullptr));
  gptoss_context_t c = nullptr;
  {
    auto model = load_conformance_model(Format::gguf);
    GPTOSS_REQUIRE_OK(gptoss_context_create(model.get(), 16, &c));
  }
  ContextPtr ctx(c);
  const uint32_t t = 42;
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(ctx.get(), 1, &t));
  GPTOSS_REQUIRE_OK(gptoss_context_process(ctx.get()));
  GPTOSS_REQUIRE_OK(gptoss_set_log_callback(nullptr, gptoss_log_level_off, nullptr));
  bool saw_load = false;
  for (const auto& m : messages) saw_load |= m.find("loaded") != std::string::npos;
  CHECK(saw_load);
  CHECK(gptoss_set_log_callback(nullptr, gptoss_log_level(42), nullptr) == gptoss_status_invalid_argument);
}

TEST_CASE("exact and fast precision both run and agree to within quantization error", "[api]") {
  const std::string path = logits_dir() + "/model.gguf";
  const auto ids = prompt_ids("p1_short");
  std::vector<float> logits[2];
  for (int exact = 0; exact < 2; ++exact) {
    gptoss_model_options o;
    gptoss_model_options_init(&o);
    o.backend = test_backend();
    o.precision = exact ? gptoss_precision_exact : gptoss_precision_fast;
    gptoss_model_t m = nullptr;
    GPTOSS_REQUIRE_OK(gptoss_model_create_with_options(path.c_str(), &o, &m));
    ModelPtr model(m);
    ContextPtr ctx = make_context(m, 64);
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(ctx.get(), ids.size(), ids.data()));
    GPTOSS_REQUIRE_OK(gptoss_context_process(ctx.get()));
    logits[exact] = logits_of(ctx.get());
  }
  double mean = 0;
  for (size_t i = 0; i < logits[0].size(); ++i) mean += std::abs(logits[0][i] - logits[1][i]);
  mean /= double(logits[0].size());
  // int8 activations move this small model's logits by ~0.02 on average (the conformance
  // tool's --precision fast compares that with llama.cpp); exact fp32 would be ~1e-6.
  CHECK(mean < 0.1);
  CHECK(max_abs_diff(logits[0], logits[1]) < 2.0);
}
