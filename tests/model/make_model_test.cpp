// gptoss-make-model writes the same seeded weights as an HF directory and as a GGUF: both
// loaders must return identical canonical tensors, with sane magnitudes, deterministically.
#include <sys/wait.h>

#include <cmath>
#include <map>

#include "libgptoss/model/dtypes.hpp"
#include "libgptoss/model/formats/gguf.hpp"
#include "libgptoss/model/weights.hpp"
#include "support/paths.hpp"
#include "tests/model/model_test_util.hpp"

namespace {

using gptoss::test::TempDir;
namespace fs = std::filesystem;

std::string tool() { return gptoss::test::binary_dir() + "/bin/gptoss-make-model"; }

bool have_tokenizer() { return fs::is_regular_file(gptoss::test::tokenizer_json()); }

// Runs the generator with `args`; returns its exit status.
int make_model(const TempDir& dir, const std::string& args) {
  REQUIRE(fs::is_regular_file(tool()));
  const std::string cmd = "'" + tool() + "' " + args + " > '" + (dir / "log.txt") + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

struct Tensor {
  gptoss_dtype dtype;
  uint32_t flags;
  std::vector<float> values;
};

std::map<std::string, Tensor> capture(const gptoss::WeightSource& w) {
  std::map<std::string, Tensor> out;
  w.for_each_tensor(w.config().num_layers, [&](const gptoss_tensor_desc& d) {
    out[d.name] = Tensor{d.dtype, d.flags, gptoss::dequantize(d)};
  });
  return out;
}

std::pair<double, double> mean_std(const std::vector<float>& v) {
  double s = 0, s2 = 0;
  for (float x : v) s += x, s2 += double(x) * x;
  const double m = s / v.size();
  return {m, std::sqrt(s2 / v.size() - m * m)};
}

}  // namespace

TEST_CASE("make-model: HF and GGUF of the tiny preset hold identical weights", "[model]") {
  TempDir dir;
  std::string args = "--preset tiny --seed 3 --format both --shard-mb 20 --out '" +
                     dir.path().string() + "/m'";
  if (have_tokenizer()) args += " --tokenizer-json '" + gptoss::test::tokenizer_json() + "'";
  REQUIRE(make_model(dir, args) == 0);
  const std::string hf = dir / "m/model-hf", gguf = dir / "m/model.gguf";
  CHECK(fs::exists(hf + "/model.safetensors.index.json"));  // sharded at 20 MiB

  gptoss::OpenOptions o;
  o.load_tokenizer = false;
  auto a = gptoss::open_checkpoint(hf, o);
  auto b = gptoss::open_checkpoint(gguf, o);
  const auto& c = a->config();
  CHECK(c.num_layers == 2);
  CHECK(c.hidden_size == 64);
  CHECK(c.num_heads == 8);
  CHECK(c.num_kv_heads == 1);
  CHECK(c.head_dim == 64);
  CHECK(c.num_experts == 32);
  CHECK(c.experts_per_token == 4);
  CHECK(c.intermediate_size == 64);
  CHECK(c.vocab_size == 201088);
  CHECK(c.layer_is_sliding == b->config().layer_is_sliding);
  CHECK(c.rms_norm_eps == b->config().rms_norm_eps);
  CHECK(c.rope_scaling_factor == b->config().rope_scaling_factor);

  const auto ta = capture(*a), tb = capture(*b);
  REQUIRE(ta.size() == 3 + 17 * 2);
  REQUIRE(tb.size() == ta.size());
  for (const auto& [name, t] : ta) {
    INFO(name);
    REQUIRE(tb.count(name));
    const Tensor& u = tb.at(name);
    CHECK((t.dtype == gptoss_dtype_bf16 || t.dtype == gptoss_dtype_mxfp4));
    CHECK(t.values.size() == u.values.size());
    CHECK(std::memcmp(t.values.data(), u.values.data(), t.values.size() * 4) == 0);
  }
  CHECK(tb.at("layers.0.attn_norm").dtype == gptoss_dtype_f32);  // as llama.cpp converts
  CHECK(tb.at("layers.0.attn_q").dtype == gptoss_dtype_bf16);
  CHECK(tb.at("layers.1.router").dtype == gptoss_dtype_f32);
  CHECK(tb.at("layers.1.mlp1").flags == 0);
  CHECK(ta.at("layers.1.mlp1").flags == GPTOSS_TENSOR_PERSISTENT);

  // Magnitudes of a trained model, so that activations and logits are not degenerate.
  auto [emb_mean, emb_std] = mean_std(ta.at("embedding").values);
  CHECK(std::abs(emb_mean) < 0.01);
  CHECK(emb_std == Approx(1.0).epsilon(0.05));
  auto [norm_mean, norm_std] = mean_std(ta.at("layers.1.mlp_norm").values);
  CHECK(norm_mean == Approx(1.0).epsilon(0.1));
  CHECK(norm_std > 0.02);
  for (const char* matrix : {"layers.0.attn_q", "layers.0.router", "layers.0.mlp1", "layers.1.mlp2",
                             "unembedding"}) {
    INFO(matrix);
    auto [m, s] = mean_std(ta.at(matrix).values);
    CHECK(std::abs(m) < 0.02);
    CHECK(s > 0.5 / 8);  // 1/sqrt(fan_in = 64) = 0.125, within a factor of 2
    CHECK(s < 2.0 / 8);
  }
  auto [sink_mean, sink_std] = mean_std(ta.at("layers.0.attn_sinks").values);
  CHECK(sink_std > 0.1);

  if (have_tokenizer()) {  // the vocabulary metadata matches llama.cpp's converter
    gptoss::gguf::File mine(gguf, true);
    gptoss::gguf::File theirs(gptoss::test::logits_dir() + "/model.gguf", true);
    CHECK(mine.get_string_array("tokenizer.ggml.tokens") ==
          theirs.get_string_array("tokenizer.ggml.tokens"));
    CHECK(mine.get_int_array("tokenizer.ggml.token_type") ==
          theirs.get_int_array("tokenizer.ggml.token_type"));
    CHECK(mine.get_string_array("tokenizer.ggml.merges") ==
          theirs.get_string_array("tokenizer.ggml.merges"));
    for (const auto& [key, value] : theirs.metadata()) {
      INFO(key);
      if (key != "general.name" && key != "general.size_label") CHECK(mine.metadata().count(key));
    }
  } else {
    WARN("no tokenizer.json at " << gptoss::test::tokenizer_json() << ": vocabulary not checked");
  }
}

TEST_CASE("make-model: the same seed gives the same bytes, another seed others", "[model]") {
  TempDir dir;
  const std::string base = " --preset tiny --layers 1 --format hf --out '" + dir.path().string();
  REQUIRE(make_model(dir, "--seed 11" + base + "/a'") == 0);
  REQUIRE(make_model(dir, "--seed 11" + base + "/b'") == 0);
  REQUIRE(make_model(dir, "--seed 12" + base + "/c'") == 0);
  const auto a = gptoss::test::read_bytes(dir / "a/model-hf/model.safetensors");
  CHECK(a == gptoss::test::read_bytes(dir / "b/model-hf/model.safetensors"));
  CHECK(a != gptoss::test::read_bytes(dir / "c/model-hf/model.safetensors"));
}

TEST_CASE("make-model: bad arguments fail without writing", "[model]") {
  TempDir dir;
  CHECK(make_model(dir, "--preset huge --out '" + (dir / "x") + "'") != 0);
  CHECK(make_model(dir, "--preset tiny") != 0);
  CHECK(make_model(dir, "--preset tiny --format onnx --out '" + (dir / "x") + "'") != 0);
  CHECK(make_model(dir, "--preset tiny --seed -1 --out '" + (dir / "x") + "'") != 0);
  CHECK(make_model(dir, "--preset tiny --tokenizer-json /nonexistent.json --out '" + (dir / "x") + "'") != 0);
  CHECK(!fs::exists(dir / "x"));
}
