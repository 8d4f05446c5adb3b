// gptoss-make-model writes the same seeded weights as an HF directory and as a GGUF: both
// loaders must return identical canonical tensors, with sane magnitudes, deterministically.
#include <sys/wait.h>

#include <cmath>
#include <map>

#include "libgptoss/model/dtypes.hpp"
#include "libgptoss/model/formats/gguf.hpp"
#include "libgptoss/model/weights.hpp"
#include "support/c_api.hpp"
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

std::map<std::string, Tensor> dequantized_tensors(const gptoss::WeightSource& w) {
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

  const auto ta = dequantized_tensors(*a), tb = dequantized_tensors(*b);
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

// llama.cpp's releases store the 2-D dense tensors as Q8_0 or F16: --gguf-dense writes the HF
// values rounded to that type (F16 exactly where a half can hold them; Q8_0 within half a step
// of its block, d = max|x| / 127 stored as f16), and the CPU backend's kernels for those types
// give logits close to the BF16 file's.
TEST_CASE("make-model: Q8_0 and F16 GGUFs hold the HF values rounded", "[model]") {
  TempDir dir;
  const std::string base = "--preset tiny --seed 5 --out '" + dir.path().string();
  REQUIRE(make_model(dir, base + "/b' --format both") == 0);
  REQUIRE(make_model(dir, base + "/q' --format gguf --gguf-dense q8_0") == 0);
  REQUIRE(make_model(dir, base + "/f' --format gguf --gguf-dense f16") == 0);
  gptoss::OpenOptions o;
  o.load_tokenizer = false;
  const auto hf = dequantized_tensors(*gptoss::open_checkpoint(dir / "b/model-hf", o));
  const auto q8 = dequantized_tensors(*gptoss::open_checkpoint(dir / "q/model.gguf", o));
  const auto f16 = dequantized_tensors(*gptoss::open_checkpoint(dir / "f/model.gguf", o));
  for (const char* name : {"embedding", "unembedding", "layers.0.attn_q", "layers.1.attn_k",
                           "layers.1.attn_v", "layers.0.attn_out"}) {
    INFO(name);
    const Tensor &ref = hf.at(name), &a = q8.at(name), &b = f16.at(name);
    CHECK(a.dtype == gptoss_dtype_q8_0);
    CHECK(b.dtype == gptoss_dtype_f16);
    REQUIRE(a.values.size() == ref.values.size());
    REQUIRE(b.values.size() == ref.values.size());
    size_t bad_q8 = 0, bad_f16 = 0, moved = 0;
    for (size_t blk = 0; blk < ref.values.size() / 32; ++blk) {
      float amax = 0;
      for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(ref.values[32 * blk + j]));
      for (size_t j = 0; j < 32; ++j) {
        const size_t i = 32 * blk + j;
        // Half a step, plus the f16 rounding of d times the largest |q|.
        if (!(std::fabs(a.values[i] - ref.values[i]) <= amax / 127 * (0.5 + 127.0 / 2048) + 1e-9)) ++bad_q8;
        if (!(std::fabs(b.values[i] - ref.values[i]) <= 3e-8)) ++bad_f16;  // subnormal halves
        moved += a.values[i] != ref.values[i];
      }
    }
    CHECK(bad_q8 == 0);
    CHECK(bad_f16 == 0);
    CHECK(moved > ref.values.size() / 2);  // Q8_0 really rounds
  }
  CHECK(q8.at("layers.0.router").dtype == gptoss_dtype_f32);  // 2-D, but F32 as llama.cpp keeps it
  CHECK(q8.at("layers.0.mlp1").dtype == gptoss_dtype_mxfp4);

  // End to end through the C API and the CPU backend (exact precision): the F16 file's logits
  // equal the BF16 file's up to fp32 rounding, the Q8_0 file's stay close.
  if (!have_tokenizer()) {
    WARN("no tokenizer.json at " << gptoss::test::tokenizer_json() << ": logits not compared");
    return;
  }
  const std::string tok = gptoss::test::tokenizer_json();
  std::vector<float> logits[3];
  size_t decode_bytes[3] = {};
  int k = 0;
  for (const char* sub : {"b", "f", "q"}) {
    gptoss_model_options mo;
    gptoss_model_options_init(&mo);
    mo.backend = "cpu";
    mo.precision = gptoss_precision_exact;
    mo.tokenizer_path = tok.c_str();
    gptoss_model_t m = nullptr;
    const std::string path = dir / (std::string(sub) + "/model.gguf");
    GPTOSS_REQUIRE_OK(gptoss_model_create_with_options(path.c_str(), &mo, &m));
    gptoss::test::ModelPtr model(m);
    gptoss_model_info info{};
    info.struct_size = sizeof(info);
    GPTOSS_REQUIRE_OK(gptoss_model_get_info(m, &info));
    decode_bytes[k] = info.decode_weight_bytes;
    auto c = gptoss::test::make_context(m, 64);
    const uint32_t ids[] = {200006, 17360, 200008, 3575, 553, 261, 10297, 2359, 13};
    GPTOSS_REQUIRE_OK(gptoss_context_append_tokens(c.get(), 9, ids));
    GPTOSS_REQUIRE_OK(gptoss_context_process(c.get()));
    logits[k++] = gptoss::test::logits_of(c.get());
  }
  // What one decode token reads, from the tiny preset's shapes (2 layers, hidden 64, 8 query
  // heads and 1 KV head of 64, 32 experts of 64, top 4) and this file's types: BF16 matrices,
  // F32 norms / biases / sinks / router, MXFP4 experts (17 bytes per 32), one embedding row.
  {
    const double H = 64, Q = 8 * 64, KV = 64, E = 32, A = 4, I = 64, V = 201088, mx = 17.0 / 32;
    const double matrices = Q * H + 2 * KV * H + H * Q;  // q, k, v, o: elements per layer
    const double layer = 2 * matrices + 4 * (H + Q + 2 * KV + H + 8 + H + E * H + E) +
                         A * (mx * 2 * I * H + 4 * 2 * I + mx * H * I + 4 * H);
    const double bf16 = 2 * layer + 2 * V * H + 4 * H + 2 * H;
    CHECK(double(decode_bytes[0]) == Approx(bf16).margin(1));
    CHECK(decode_bytes[1] == decode_bytes[0]);  // F16 is as wide as BF16
    // Q8_0: 34 bytes per 32 instead of 64 for the same matrices, the embedding row included.
    const double q8_saving = (2.0 - 34.0 / 32) * (2 * matrices + V * H + H);
    CHECK(double(decode_bytes[2]) == Approx(bf16 - q8_saving).margin(1));
  }
  double scale = 0;
  for (float v : logits[0]) scale = std::max(scale, double(std::fabs(v)));
  REQUIRE(scale > 0.1);
  const double d_f16 = gptoss::test::max_abs_diff(logits[0], logits[1]);
  const double d_q8 = gptoss::test::max_abs_diff(logits[0], logits[2]);
  // This tiny random model amplifies the rounding (its routing has near-ties): measured at
  // every ISA, the scalar reference included, max 0.14 of the largest logit, mean 0.13 of the
  // mean |logit|, correlation 0.99. A wrong scale or block would leave no correlation.
  double mean_abs = 0, mean_q8 = 0, sa = 0, sb = 0, sab = 0, saa = 0, sbb = 0;
  const double n = double(logits[0].size());
  for (size_t i = 0; i < logits[0].size(); ++i) {
    const double a = logits[0][i], b = logits[2][i];
    mean_abs += std::fabs(a) / n;
    mean_q8 += std::fabs(b - a) / n;
    sa += a, sb += b, sab += a * b, saa += a * a, sbb += b * b;
  }
  const double corr = (sab - sa * sb / n) / std::sqrt((saa - sa * sa / n) * (sbb - sb * sb / n));
  INFO("max |logit| " << scale << ", F16 " << d_f16 << ", Q8_0 " << d_q8 << "; mean |logit| "
                      << mean_abs << ", Q8_0 " << mean_q8 << "; correlation " << corr);
  CHECK(d_f16 <= 1e-5 * scale);
  CHECK(d_q8 > 0.0);
  CHECK(d_q8 <= 0.25 * scale);
  CHECK(mean_q8 <= 0.2 * mean_abs);
  CHECK(corr > 0.95);
}

// The fuzz seeds (tests/fuzz/make_seeds.py) are micro checkpoints: every tensor kind in a few
// KB, both formats holding the same values, loadable as a bare checkpoint only.
TEST_CASE("make-model: the micro preset is a complete checkpoint of a few KB", "[model]") {
  TempDir dir;
  const std::string base = "--preset micro --seed 2 --out '" + dir.path().string();
  REQUIRE(make_model(dir, base + "/m' --format both") == 0);
  REQUIRE(make_model(dir, base + "/q' --format gguf --gguf-dense q8_0") == 0);
  CHECK(fs::file_size(dir / "m/model-hf/model.safetensors") < 32 * 1024);
  CHECK(fs::file_size(dir / "m/model.gguf") < 32 * 1024);
  gptoss::OpenOptions o;
  o.load_tokenizer = false;
  auto a = gptoss::open_checkpoint(dir / "m/model-hf", o);
  auto b = gptoss::open_checkpoint(dir / "m/model.gguf", o);
  const auto& c = a->config();
  CHECK(c.vocab_size == 16);
  CHECK(c.num_layers == 2);
  CHECK(c.hidden_size == 32);
  CHECK(c.num_heads == 2);
  CHECK(c.num_kv_heads == 1);
  CHECK(c.head_dim == 16);
  CHECK(c.num_experts == 1);
  CHECK(c.experts_per_token == 1);
  CHECK(c.sliding_window == 4);
  CHECK(c.layer_is_sliding == std::vector<bool>{true, false});
  CHECK(b->config().layer_is_sliding == c.layer_is_sliding);
  const auto ta = dequantized_tensors(*a), tb = dequantized_tensors(*b);
  REQUIRE(ta.size() == 3 + 17 * 2);
  for (const auto& [name, t] : ta) {
    INFO(name);
    REQUIRE(tb.count(name));
    CHECK(t.values == tb.at(name).values);
  }
  CHECK(dequantized_tensors(*gptoss::open_checkpoint(dir / "q/model.gguf", o))
            .at("embedding")
            .dtype == gptoss_dtype_q8_0);
  // No tokenizer fits 16 rows: through the C API it fails, naming the mismatch.
  if (have_tokenizer()) {
    gptoss_model_options mo;
    gptoss_model_options_init(&mo);
    const std::string tok = gptoss::test::tokenizer_json();
    mo.tokenizer_path = tok.c_str();
    gptoss_model_t m = nullptr;
    const std::string path = dir / "m/model.gguf";
    CHECK(gptoss_model_create_with_options(path.c_str(), &mo, &m) == gptoss_status_invalid_argument);
    CHECK(std::string(gptoss_get_last_error_message()).find("only 16 rows") != std::string::npos);
    CHECK(m == nullptr);
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
  CHECK(make_model(dir, "--preset tiny --gguf-dense int4 --out '" + (dir / "x") + "'") != 0);
  CHECK(make_model(dir, "--preset tiny --format hf --gguf-dense q8_0 --out '" + (dir / "x") + "'") != 0);
  CHECK(!fs::exists(dir / "x"));
}
