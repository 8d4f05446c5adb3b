// A model over two devices of one backend (GPTOSS_CPU_DEVICES=2 on the CPU and the strict
// device): by layer ranges it computes exactly what one device does (the same kernels, layer
// by layer, activations copied across); by expert shares it differs only in the order the
// experts' contributions are summed.
#include <cstdlib>
#include <string>
#include <vector>

#include "libgptoss/runtime/context.hpp"
#include "support/c_api.hpp"

using namespace gptoss::test;

namespace {

// Sets GPTOSS_CPU_DEVICES for the scope (read whenever the plugin counts its devices).
class CpuDevices {
 public:
  explicit CpuDevices(int n) { ::setenv("GPTOSS_CPU_DEVICES", std::to_string(n).c_str(), 1); }
  ~CpuDevices() { ::unsetenv("GPTOSS_CPU_DEVICES"); }
};

std::shared_ptr<const gptoss::Model> load(const std::string& backend, gptoss::SplitMode split) {
  gptoss::LoadOptions o;
  o.backend = backend;
  o.precision = gptoss_precision_exact;
  o.tokenizer_path = tokenizer_json();
  o.split = split;
  return gptoss::Model::load(logits_dir() + "/model-hf", o);
}

// Logits after a chunked prefill of p3_long and a few decode steps, and of a second context
// batched with the first in the same steps (a shared pool).
std::vector<std::vector<float>> run(const std::shared_ptr<const gptoss::Model>& model) {
  const auto ids = prompt_ids("p3_long"), other = prompt_ids("p2_harmony");
  auto pool = std::make_shared<gptoss::KvPool>(model, 1024, 2, 128, gptoss_kv_dtype_f32);
  gptoss::Context a(model, pool, 512, 128), b(model, pool, 512, 128);
  a.append(std::span<const uint32_t>(ids.data(), ids.size() - 3));
  b.append(other);
  gptoss::Context* both[] = {&a, &b};
  gptoss::Context::process_all(both);
  for (size_t t = ids.size() - 3; t < ids.size(); ++t) {
    a.append(std::span<const uint32_t>(&ids[t], 1));
    a.process();
  }
  return {a.host_logits(), b.host_logits()};
}

}  // namespace

TEST_CASE("a model split over two devices gives one device's logits", "[devices]") {
  CpuDevices two(2);
  for (const char* backend : {"cpu", "strict"}) {
    INFO(backend);
    const auto one = run(load(backend, gptoss::SplitMode::none));
    auto layers = load(backend, gptoss::SplitMode::layer);
    REQUIRE(layers->num_devices() == 2);
    CHECK(layers->placement().layer_device.front() == 0);
    CHECK(layers->placement().layer_device.back() == 1);
    const auto by_layer = run(layers);
    auto experts = load(backend, gptoss::SplitMode::expert);
    REQUIRE(experts->num_devices() == 2);
    const auto by_expert = run(experts);
    for (size_t i = 0; i < one.size(); ++i) {
      CHECK(max_abs_diff(by_layer[i], one[i]) == 0.0);
      CHECK(max_abs_diff(by_expert[i], one[i]) <= 1e-5);
    }
  }
}

TEST_CASE("split modes: one device, layer ranges and expert shares are planned evenly", "[devices]") {
  using gptoss::SplitMode;
  const auto p = gptoss::plan_placement(SplitMode::layer, 3, 24, 32);
  CHECK(p.n_devices == 3);
  CHECK(p.layer_device[7] == 0);
  CHECK(p.layer_device[8] == 1);
  CHECK(p.layer_device[23] == 2);
  CHECK(p.output_device() == 2);
  CHECK_FALSE(p.experts_split());
  const auto few = gptoss::plan_placement(SplitMode::layer, 8, 4, 32);  // no empty device
  CHECK(few.n_devices == 4);
  const auto e = gptoss::plan_placement(SplitMode::expert, 3, 24, 128);
  CHECK(e.experts_split());
  CHECK(e.expert_begin == std::vector<uint32_t>{0, 42, 85, 128});
  CHECK(e.layer_device[23] == 0);
  CHECK(e.output_device() == 0);
  const auto none = gptoss::plan_placement(SplitMode::none, 1, 24, 32);
  CHECK(none.n_devices == 1);
}

TEST_CASE("GPTOSS_CPU_DEVICES and split_mode through the C API", "[devices]") {
  CpuDevices two(2);
  gptoss_model_options o;
  gptoss_model_options_init(&o);
  CHECK(o.split_mode == gptoss_split_mode_layer);
  o.backend = "cpu";
  o.split_mode = gptoss_split_mode(7);
  const std::string path = logits_dir() + "/model.gguf";
  gptoss_model_t m = nullptr;
  CHECK(gptoss_model_create_with_options(path.c_str(), &o, &m) == gptoss_status_invalid_argument);
  CHECK(std::string(gptoss_get_last_error_message()).find("split_mode") != std::string::npos);
  o.split_mode = gptoss_split_mode_none;
  o.device = 2;  // there are two
  CHECK(gptoss_model_create_with_options(path.c_str(), &o, &m) == gptoss_status_invalid_argument);
  CHECK(std::string(gptoss_get_last_error_message()).find("device 2") != std::string::npos);
  o.device = 1;
  GPTOSS_REQUIRE_OK(gptoss_model_create_with_options(path.c_str(), &o, &m));
  gptoss_model_release(m);
}
