// Both checkpoint formats of the shared conformance model (the same weights: an HF directory
// and llama.cpp's conversion of it) must give the same config and, tensor by tensor, the same
// values after dequantization.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "libgptoss/model/dtypes.hpp"
#include "libgptoss/model/formats/gguf.hpp"
#include "libgptoss/model/weights.hpp"
#include "support/paths.hpp"
#include "tests/model/model_test_util.hpp"

namespace {

using namespace gptoss;

using test::conformance_hf_dir;
using test::no_tokenizer;

struct Captured {
  gptoss_tensor_desc desc;
  std::string name;
  std::vector<float> values;
};

std::map<std::string, Captured> captured_tensors(const WeightSource& w) {
  std::map<std::string, Captured> out;
  w.for_each_tensor(w.config().num_layers, [&](const gptoss_tensor_desc& d) {
    Captured c{d, d.name, dequantize(d)};
    c.desc.name = nullptr;  // only valid during the call
    c.desc.data = c.desc.scales = nullptr;
    REQUIRE(out.emplace(c.name, std::move(c)).second);
  });
  return out;
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

const std::string gguf_path() { return test::logits_dir() + "/model.gguf"; }

}  // namespace

TEST_CASE("HF config of the conformance model matches its config.json", "[model]") {
  std::ifstream in(conformance_hf_dir() + "/config.json");
  const auto j = nlohmann::json::parse(in);
  auto w = open_checkpoint(conformance_hf_dir(), no_tokenizer());
  const ModelConfig& c = w->config();
  CHECK(std::string(w->format()) == "safetensors");
  CHECK(c.vocab_size == j["vocab_size"].get<uint32_t>());
  CHECK(c.hidden_size == j["hidden_size"].get<uint32_t>());
  CHECK(c.num_layers == j["num_hidden_layers"].get<uint32_t>());
  CHECK(c.num_heads == j["num_attention_heads"].get<uint32_t>());
  CHECK(c.num_kv_heads == j["num_key_value_heads"].get<uint32_t>());
  CHECK(c.head_dim == j["head_dim"].get<uint32_t>());
  CHECK(c.num_experts == j["num_local_experts"].get<uint32_t>());
  CHECK(c.experts_per_token == j["num_experts_per_tok"].get<uint32_t>());
  CHECK(c.intermediate_size == j["intermediate_size"].get<uint32_t>());
  CHECK(c.sliding_window == j["sliding_window"].get<uint32_t>());
  CHECK(c.max_context_length == j["max_position_embeddings"].get<uint32_t>());
  CHECK(c.rms_norm_eps == j["rms_norm_eps"].get<float>());
  CHECK(c.swiglu_limit == j["swiglu_limit"].get<float>());
  CHECK(c.rope_theta == j["rope_theta"].get<double>());
  const auto& rs = j["rope_scaling"];
  CHECK(c.rope_scaling_factor == rs["factor"].get<double>());
  CHECK(c.rope_beta_fast == rs["beta_fast"].get<double>());
  CHECK(c.rope_beta_slow == rs["beta_slow"].get<double>());
  CHECK(c.rope_original_context == rs["original_max_position_embeddings"].get<double>());
  CHECK(c.rope_truncate == rs["truncate"].get<bool>());
  REQUIRE(c.layer_is_sliding.size() == j["layer_types"].size());
  for (size_t i = 0; i < c.layer_is_sliding.size(); ++i)
    CHECK(c.layer_is_sliding[i] == (j["layer_types"][i] == "sliding_attention"));
}

TEST_CASE("GGUF config of the conformance model equals the HF one", "[model]") {
  auto hf = open_checkpoint(conformance_hf_dir(), no_tokenizer());
  auto gg = open_checkpoint(gguf_path(), no_tokenizer());
  CHECK(std::string(gg->format()) == "gguf");
  const ModelConfig &a = hf->config(), &b = gg->config();
  CHECK(a.vocab_size == b.vocab_size);
  CHECK(a.hidden_size == b.hidden_size);
  CHECK(a.num_layers == b.num_layers);
  CHECK(a.num_heads == b.num_heads);
  CHECK(a.num_kv_heads == b.num_kv_heads);
  CHECK(a.head_dim == b.head_dim);
  CHECK(a.num_experts == b.num_experts);
  CHECK(a.experts_per_token == b.experts_per_token);
  CHECK(a.intermediate_size == b.intermediate_size);
  CHECK(a.sliding_window == b.sliding_window);
  CHECK(a.max_context_length == b.max_context_length);
  CHECK(a.rms_norm_eps == b.rms_norm_eps);
  CHECK(a.swiglu_limit == b.swiglu_limit);
  CHECK(a.rope_theta == b.rope_theta);
  CHECK(a.rope_scaling_factor == b.rope_scaling_factor);
  CHECK(a.rope_original_context == b.rope_original_context);
  CHECK(a.rope_beta_fast == b.rope_beta_fast);
  CHECK(a.rope_beta_slow == b.rope_beta_slow);
  CHECK(a.rope_truncate == b.rope_truncate);
  CHECK(a.layer_is_sliding == b.layer_is_sliding);
}

TEST_CASE("GGUF and HF canonical tensors of the conformance model are bit-identical",
          "[model]") {
  for (bool mmap : {true, false}) {
    OpenOptions o = no_tokenizer();
    o.use_mmap = mmap;
    auto hf_source = open_checkpoint(conformance_hf_dir(), o);
    auto hf = captured_tensors(*hf_source);
    auto gg = captured_tensors(*open_checkpoint(gguf_path(), o));
    REQUIRE(hf.size() == 3 + 17 * hf_source->config().num_layers);
    REQUIRE(gg.size() == hf.size());
    for (const auto& [name, h] : hf) {
      INFO(name);
      REQUIRE(gg.count(name) == 1);
      const Captured& g = gg.at(name);
      CHECK(g.desc.role == h.desc.role);
      CHECK(g.desc.layer == h.desc.layer);
      CHECK(g.desc.ndim == h.desc.ndim);
      for (int i = 0; i < 4; ++i) CHECK(g.desc.shape[i] == h.desc.shape[i]);
      CHECK(h.desc.flags == GPTOSS_TENSOR_PERSISTENT);
      CHECK(bit_equal(g.values, h.values));
    }
    // Spot-check that the data are not degenerate (all zero would compare equal too).
    const auto& mlp1 = hf.at("layers.0.mlp1").values;
    CHECK(std::count(mlp1.begin(), mlp1.end(), 0.0f) < static_cast<long>(mlp1.size() / 2));
  }
}

TEST_CASE("ggml MXFP4 blocks keep element j low and j+16 high (checked against the HF file)",
          "[model]") {
  // Decode a raw GGUF expert tensor with ggml's own rule, independently of the loader's
  // conversion, and compare it with the HF tensor: this pins down the nibble order.
  gguf::File g(gguf_path(), true);
  const auto* down = g.find_tensor("blk.1.ffn_down_exps.weight");
  REQUIRE(down);
  REQUIRE(down->type == gguf::GgmlType::mxfp4);
  std::vector<float> ggml_values;
  for (size_t b = 0; b < down->size / 17; ++b) {
    const uint8_t* blk = down->data + 17 * b;
    const float scale = gptoss_e8m0_to_f32(blk[0]);
    float v[32];
    for (int j = 0; j < 16; ++j) {
      v[j] = gptoss_mxfp4_value(blk[1 + j] & 0xf) * scale;
      v[j + 16] = gptoss_mxfp4_value(uint8_t(blk[1 + j] >> 4)) * scale;
    }
    ggml_values.insert(ggml_values.end(), v, v + 32);
  }
  std::vector<float> hf_values;
  open_checkpoint(conformance_hf_dir(), no_tokenizer())
      ->for_each_tensor(2, [&](const gptoss_tensor_desc& d) {
        if (std::string(d.name) == "layers.1.mlp2") hf_values = dequantize(d);
      });
  REQUIRE(!hf_values.empty());
  CHECK(bit_equal(ggml_values, hf_values));
}

TEST_CASE("for_each_tensor visits only the requested layers", "[model]") {
  for (const auto& path : {conformance_hf_dir(), gguf_path()}) {
    auto w = open_checkpoint(path, no_tokenizer());
    int globals = 0, layer_tensors = 0, max_layer = -1;
    w->for_each_tensor(2, [&](const gptoss_tensor_desc& d) {
      REQUIRE(d.struct_size == sizeof(gptoss_tensor_desc));
      if (d.layer < 0) ++globals;
      else ++layer_tensors;
      max_layer = std::max(max_layer, static_cast<int>(d.layer));
    });
    CHECK(globals == 3);
    CHECK(layer_tensors == 2 * 17);
    CHECK(max_layer == 1);
    CHECK(test::status_of([&] { w->for_each_tensor(5, [](const gptoss_tensor_desc&) {}); }) ==
          gptoss_status_invalid_argument);
  }
}
