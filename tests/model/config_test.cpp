// ModelConfig::from_hf_json and validate: every field of the real config.json is read, and
// absurd or inconsistent values are refused with invalid_argument (unsupported variants with
// unsupported_argument).
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "libgptoss/model/config.hpp"
#include "support/paths.hpp"
#include "tests/model/model_test_util.hpp"

namespace {

nlohmann::json conformance_config() {
  std::ifstream in(gptoss::test::logits_dir() + "/model-hf/config.json");
  return nlohmann::json::parse(in);
}

gptoss_status status_with(const std::function<void(nlohmann::json&)>& mutate) {
  auto j = conformance_config();
  mutate(j);
  return gptoss::test::status_of([&] { gptoss::ModelConfig::from_hf_json(j); });
}

}  // namespace

TEST_CASE("from_hf_json reads defaults for optional fields", "[model]") {
  auto j = conformance_config();
  j.erase("layer_types");
  j.erase("rope_scaling");
  auto c = gptoss::ModelConfig::from_hf_json(j);
  REQUIRE(c.layer_is_sliding.size() == 4);
  CHECK(c.layer_is_sliding == std::vector<bool>{true, false, true, false});
  CHECK(c.rope_scaling_factor == 1.0);
}

TEST_CASE("from_hf_json refuses absurd values with invalid_argument", "[model]") {
  using J = nlohmann::json;
  const std::vector<std::pair<const char*, std::function<void(J&)>>> cases = {
      {"0 layers", [](J& j) { j["num_hidden_layers"] = 0; }},
      {"kv heads not dividing", [](J& j) { j["num_key_value_heads"] = 3; }},
      {"more kv heads than heads", [](J& j) { j["num_key_value_heads"] = 16; }},
      {"hidden 1e9", [](J& j) { j["hidden_size"] = 1000000000; }},
      {"hidden not a multiple of 32", [](J& j) { j["hidden_size"] = 100; }},
      {"intermediate 0", [](J& j) { j["intermediate_size"] = 0; }},
      {"negative eps", [](J& j) { j["rms_norm_eps"] = -1e-5; }},
      {"NaN eps", [](J& j) { j["rms_norm_eps"] = std::nan(""); }},
      {"negative layers", [](J& j) { j["num_hidden_layers"] = -4; }},
      {"string vocab", [](J& j) { j["vocab_size"] = "lots"; }},
      {"fractional heads", [](J& j) { j["num_attention_heads"] = 8.5; }},
      {"vocab 0", [](J& j) { j["vocab_size"] = 0; }},
      {"odd head_dim", [](J& j) { j["head_dim"] = 63; }},
      {"top-k above experts", [](J& j) { j["num_experts_per_tok"] = 33; }},
      {"zero experts", [](J& j) { j["num_local_experts"] = 0; }},
      {"rope factor below 1", [](J& j) { j["rope_scaling"]["factor"] = 0.5; }},
      {"negative theta", [](J& j) { j["rope_theta"] = -1; }},
      {"infinite swiglu limit", [](J& j) { j["swiglu_limit"] = INFINITY; }},
      {"layer_types too short", [](J& j) { j["layer_types"].erase(0); }},
      {"unknown layer type", [](J& j) { j["layer_types"][1] = "linear_attention"; }},
      {"sliding layers without window", [](J& j) { j.erase("sliding_window"); }},
      {"missing hidden_size", [](J& j) { j.erase("hidden_size"); }},
      {"truncate not a bool", [](J& j) { j["rope_scaling"]["truncate"] = "no"; }},
      {"rope_scaling not an object", [](J& j) { j["rope_scaling"] = 3; }},
      {"2^40 layers", [](J& j) { j["num_hidden_layers"] = uint64_t{1} << 40; }},
      // 4 billion fits a uint32: it used to cost 512 MB of layer types before being refused.
      {"4e9 layers", [](J& j) { j["num_hidden_layers"] = uint64_t{4000000000}; j.erase("layer_types"); }},
  };
  for (const auto& [what, mutate] : cases) {
    INFO(what);
    CHECK(status_with(mutate) == gptoss_status_invalid_argument);
  }
  CHECK(gptoss::test::status_of([] { gptoss::ModelConfig::from_hf_json(nlohmann::json::array()); }) ==
        gptoss_status_invalid_argument);
}

TEST_CASE("from_hf_json refuses other architectures and quantizations as unsupported",
          "[model]") {
  CHECK(status_with([](nlohmann::json& j) { j["model_type"] = "llama"; }) ==
        gptoss_status_unsupported_argument);
  CHECK(status_with([](nlohmann::json& j) { j["rope_scaling"]["rope_type"] = "linear"; }) ==
        gptoss_status_unsupported_argument);
  CHECK(status_with([](nlohmann::json& j) { j["quantization_config"]["quant_method"] = "gptq"; }) ==
        gptoss_status_unsupported_argument);
}

TEST_CASE("validate names the offending field", "[model]") {
  gptoss::ModelConfig c;  // the 20b defaults, but without layer types
  std::string msg;
  CHECK(gptoss::test::status_of([&] { c.validate(); }, &msg) == gptoss_status_invalid_argument);
  CHECK(msg.find("layer types") != std::string::npos);
  for (uint32_t i = 0; i < c.num_layers; ++i) c.layer_is_sliding.push_back(i % 2 == 0);
  CHECK_NOTHROW(c.validate());
  c.num_kv_heads = 7;
  CHECK(gptoss::test::status_of([&] { c.validate(); }, &msg) == gptoss_status_invalid_argument);
  CHECK(msg.find("num_kv_heads") != std::string::npos);
}
