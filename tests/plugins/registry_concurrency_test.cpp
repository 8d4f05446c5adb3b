// The plugin registry and model loading under concurrency: a registry scanned for the first
// time by several threads at once, and models (HF and GGUF, whose MXFP4 conversion runs its
// own threads) loaded on several threads while another switches the log callback. Tagged
// [concurrency]: the ThreadSanitizer build runs these (docs/reliability.md). Workers record
// what happened; Catch2 assertions run on the main thread only (it is not thread safe).
#include <catch2/catch.hpp>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "libgptoss/backend/registry.hpp"
#include "libgptoss/common/error.hpp"
#include "support/c_api.hpp"

using namespace gptoss;

TEST_CASE("registry: a first scan from several threads at once", "[concurrency][backend]") {
  BackendRegistry registry;  // not the process-wide one: this one has not scanned yet
  constexpr int kThreads = 4;
  std::vector<std::string> names(kThreads), selected(kThreads);
  std::vector<size_t> probes(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      for (const auto& p : registry.plugins()) names[size_t(i)] += p->name + " ";
      probes[size_t(i)] = registry.probes().size();
      try {
        selected[size_t(i)] = registry.select(i % 2 ? "cpu" : "auto")->name;
      } catch (const Error& e) {
        selected[size_t(i)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    CHECK(names[size_t(i)] == names[0]);
    CHECK(probes[size_t(i)] == probes[0]);
    CHECK(selected[size_t(i)] == "cpu");
  }
  CHECK(names[0].find("cpu") != std::string::npos);
}

TEST_CASE("models loaded on several threads while the log callback changes",
          "[concurrency][backend][api][fixed-device]") {
  static std::atomic<size_t> messages{0};
  const std::string tokenizer = test::tokenizer_json();
  const std::string paths[] = {test::logits_dir() + "/model.gguf", test::logits_dir() + "/model-hf",
                               test::logits_dir() + "/model.gguf"};
  constexpr size_t kLoads = 3;
  std::vector<gptoss_status> status(kLoads, gptoss_status_internal);
  std::vector<std::string> errors(kLoads);
  std::vector<std::vector<float>> logits(kLoads);
  std::atomic<bool> loading{true};

  std::thread logger([&] {
    for (int i = 0; loading; ++i) {
      if (i % 2 == 0)
        gptoss_set_log_callback([](gptoss_log_level, const char*, void*) { ++messages; },
                                gptoss_log_level_debug, nullptr);
      else
        gptoss_set_log_callback(nullptr, gptoss_log_level_off, nullptr);
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> loaders;
  for (size_t i = 0; i < kLoads; ++i)
    loaders.emplace_back([&, i] {
      gptoss_model_options o;
      gptoss_model_options_init(&o);
      o.backend = i == 0 ? "auto" : "cpu";
      o.precision = gptoss_precision_exact;  // so that HF and GGUF compare to rounding
      o.tokenizer_path = paths[i].find(".gguf") == std::string::npos ? tokenizer.c_str() : nullptr;
      gptoss_model_t m = nullptr;
      status[i] = gptoss_model_create_with_options(paths[i].c_str(), &o, &m);
      if (status[i] != gptoss_status_success) {
        errors[i] = gptoss_get_last_error_message();
        return;
      }
      gptoss_context_t c = nullptr;
      const uint32_t tokens[3] = {200006, 1428, 200008};  // <|start|>user<|message|>
      if (gptoss_context_create(m, 16, &c) == gptoss_status_success &&
          gptoss_context_append_tokens(c, 3, tokens) == gptoss_status_success &&
          gptoss_context_process(c) == gptoss_status_success) {
        logits[i].resize(201088);
        size_t n = 0;
        gptoss_context_get_logits(c, logits[i].data(), logits[i].size(), &n);
      }
      gptoss_context_release(c);
      gptoss_model_release(m);
    });
  for (auto& t : loaders) t.join();
  loading = false;
  logger.join();
  gptoss_set_log_callback(nullptr, gptoss_log_level_off, nullptr);

  for (size_t i = 0; i < kLoads; ++i) {
    INFO(paths[i] << ": " << errors[i]);
    REQUIRE(status[i] == gptoss_status_success);
    REQUIRE(logits[i].size() == 201088);
  }
  // The GGUF and HF files hold the same values (the GGUF keeps norms in F32): the two GGUF
  // loads agree bit for bit, the HF one to float rounding.
  CHECK(logits[0] == logits[2]);
  CHECK(test::max_abs_diff(logits[0], logits[1]) < 1e-4);
}
