// The core on the strict test device (tests/plugins/strict): no allocation once a decode shape
// is warm, the same calls every decode step, asynchronous failures reported at the next
// synchronising call without advancing the context, KV growth that keeps what was written,
// and the fused slots equal to their reference compositions (strict vs strict-minimal).
#include <dlfcn.h>

#include <string>
#include <vector>

#include "support/c_api.hpp"

using namespace gptoss::test;

namespace {

struct StrictCounters {
  uint64_t allocations, kv_growths, steps, replay_mismatches;
};

// The strict plugin's test hooks, from the copy the registry loaded (dlopen by the same path
// returns the same instance).
class StrictHooks {
 public:
  StrictHooks() {
    so_ = ::dlopen((binary_dir() + "/lib/libgptoss-backend-strict.so").c_str(), RTLD_NOW);
    REQUIRE(so_ != nullptr);
    arm_ = reinterpret_cast<void (*)(int)>(::dlsym(so_, "gptoss_strict_arm"));
    counters_ = reinterpret_cast<void (*)(StrictCounters*)>(::dlsym(so_, "gptoss_strict_get_counters"));
    fail_ = reinterpret_cast<void (*)(const char*, uint32_t)>(::dlsym(so_, "gptoss_strict_fail_op"));
    REQUIRE((arm_ && counters_ && fail_));
  }
  ~StrictHooks() {
    arm_(0);
    fail_(nullptr, 0);
    ::dlclose(so_);
  }
  void arm(bool on) const { arm_(on ? 1 : 0); }
  StrictCounters counters() const {
    StrictCounters c{};
    counters_(&c);
    return c;
  }
  void fail(const char* op, uint32_t nth) const { fail_(op, nth); }

 private:
  void* so_ = nullptr;
  void (*arm_)(int) = nullptr;
  void (*counters_)(StrictCounters*) = nullptr;
  void (*fail_)(const char*, uint32_t) = nullptr;
};

ModelPtr load_on(const char* backend) {
  return load_conformance_model(Format::hf, 0, gptoss_precision_exact, backend);
}

// Samples and appends n tokens; returns them.
std::vector<uint32_t> decode(gptoss_context_t c, gptoss_sampler_t s, int n) {
  std::vector<uint32_t> out;
  for (int i = 0; i < n; ++i) {
    uint32_t t = 0;
    GPTOSS_REQUIRE_OK(gptoss_context_sample(c, s, &t));
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c, 1, &t));
    out.push_back(t);
  }
  return out;
}

}  // namespace

TEST_CASE("strict device: a warm decode loop allocates nothing and repeats its calls", "[strict]") {
  StrictHooks hooks;
  auto model = load_on("strict");
  const auto ids = prompt_ids("p2_harmony");
  auto c = make_context(model.get(), 256);
  auto sampler = make_sampler(0.7f, 3);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), ids.size(), ids.data()));
  decode(c.get(), sampler.get(), 2);  // the prefill shape, then the decode shape, warm
  const StrictCounters before = hooks.counters();
  hooks.arm(true);
  const auto tokens = decode(c.get(), sampler.get(), 24);
  hooks.arm(false);
  const StrictCounters after = hooks.counters();
  CHECK(tokens.size() == 24);
  CHECK(after.allocations == before.allocations);
  CHECK(after.steps >= before.steps + 24);
  CHECK(after.replay_mismatches == before.replay_mismatches);
}

TEST_CASE("strict device: an armed device refuses allocation with a clear error", "[strict]") {
  StrictHooks hooks;
  auto model = load_on("strict");
  hooks.arm(true);
  gptoss_context_t c = nullptr;
  const gptoss_status st = gptoss_context_create(model.get(), 64, &c);
  hooks.arm(false);
  CHECK(st == gptoss_status_insufficient_resources);
  CHECK(c == nullptr);
  CHECK(std::string(gptoss_get_last_error_message()).find("armed") != std::string::npos);
}

TEST_CASE("strict device: an asynchronous failure names its op and advances nothing", "[strict]") {
  StrictHooks hooks;
  auto model = load_on("strict");
  const auto ids = prompt_ids("p1_short");
  auto clean = make_context(model.get(), 64);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(clean.get(), ids.size(), ids.data()));
  GPTOSS_REQUIRE_OK(gptoss_context_process(clean.get()));

  auto c = make_context(model.get(), 64);
  GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), ids.size(), ids.data()));
  hooks.fail("moe", 3);  // the third layer's MoE fails while the step runs
  CHECK(gptoss_context_process(c.get()) == gptoss_status_internal);
  const std::string msg = gptoss_get_last_error_message();
  INFO(msg);
  CHECK(msg.find("moe") != std::string::npos);
  CHECK(msg.find("injected failure") != std::string::npos);
  size_t processed = 99;
  GPTOSS_REQUIRE_OK(gptoss_context_get_num_processed_tokens(c.get(), &processed));
  CHECK(processed == 0);
  float f = 0;
  size_t n = 0;
  CHECK(gptoss_context_get_logits(c.get(), &f, 1, &n) == gptoss_status_invalid_state);
  GPTOSS_REQUIRE_OK(gptoss_context_process(c.get()));  // the failure is not sticky
  CHECK(max_abs_diff(logits_of(c.get()), logits_of(clean.get())) == 0.0);
}

TEST_CASE("strict device: out of device memory says how much is left", "[strict]") {
  StrictHooks hooks;
  auto model = load_on("strict");
  hooks.fail("buffer_alloc", 1);
  gptoss_context_t c = nullptr;
  CHECK(gptoss_context_create(model.get(), 64, &c) == gptoss_status_insufficient_memory);
  CHECK(c == nullptr);
  const std::string msg = gptoss_get_last_error_message();
  INFO(msg);
  CHECK(msg.find("logits buffer allocation failed") != std::string::npos);
  CHECK(msg.find("MiB free of") != std::string::npos);
}

TEST_CASE("strict device: KV caches grow on demand and keep what was written", "[strict]") {
  StrictHooks hooks;
  // 1500 positions: the full-attention cache starts at 64 pages (1024 positions) and must
  // grow; new pages are NaN until written, so a read of a stale or unwritten slot shows.
  std::vector<uint32_t> ids;
  const auto p3 = prompt_ids("p3_long");
  while (ids.size() < 1500) ids.insert(ids.end(), p3.begin(), p3.end());
  ids.resize(1500);
  std::vector<float> logits[2];
  int i = 0;
  for (const char* backend : {"strict", "cpu"}) {
    auto model = load_on(backend);
    auto c = make_context(model.get(), 2048, 256);
    const StrictCounters before = hooks.counters();
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), ids.size(), ids.data()));
    GPTOSS_REQUIRE_OK(gptoss_context_process(c.get()));
    if (i == 0) CHECK(hooks.counters().kv_growths > before.kv_growths);
    logits[i++] = logits_of(c.get());
  }
  // The same kernels on both: equal up to the thread split of the CPU's SIMD sums.
  CHECK(max_abs_diff(logits[0], logits[1]) <= 1e-5);
}

TEST_CASE("fused slots give their reference compositions' logits", "[strict]") {
  // strict has linear_qkv, add_rmsnorm and rope_kv_write; strict-minimal has none and the core
  // composes linear, add, rmsnorm, rope and kv_write. Same CPU kernels underneath, exact
  // precision: the same numbers bit for bit, through prefill chunks and decode.
  const auto ids = prompt_ids("p3_long");
  std::vector<std::vector<float>> runs;
  for (const char* backend : {"strict", "strict-minimal"}) {
    auto model = load_on(backend);
    auto c = make_context(model.get(), 512, 96);
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), ids.size() - 4, ids.data()));
    GPTOSS_REQUIRE_OK(gptoss_context_process(c.get()));
    for (size_t t = ids.size() - 4; t < ids.size(); ++t) {
      GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), 1, &ids[t]));
      GPTOSS_REQUIRE_OK(gptoss_context_process(c.get()));
    }
    runs.push_back(logits_of(c.get()));
  }
  CHECK(max_abs_diff(runs[0], runs[1]) == 0.0);
}
