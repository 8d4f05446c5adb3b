// open_checkpoint on damaged copies of the conformance model: a missing tensor, a wrong dtype
// or shape, a bad path or config, each a clear error that names the problem.
#include <fstream>

#include <nlohmann/json.hpp>

#include "libgptoss/model/weights.hpp"
#include "support/paths.hpp"
#include "tests/model/model_test_util.hpp"

namespace {

using gptoss::test::TempDir;
using gptoss::test::status_of;
namespace fs = std::filesystem;

using gptoss::test::conformance_hf_dir;
using gptoss::test::no_tokenizer;

// Copies the conformance HF checkpoint into `dir`, rewriting the safetensors header through
// `mutate` (the data section is kept as it is).
void copy_hf(const TempDir& dir, const std::function<void(nlohmann::json&)>& mutate) {
  fs::copy_file(conformance_hf_dir() + "/config.json", dir / "config.json");
  const auto bytes = gptoss::test::read_bytes(conformance_hf_dir() + "/model.safetensors");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  auto header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(n));
  mutate(header);
  const std::string h = header.dump();
  std::vector<uint8_t> out(8);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(uint64_t(h.size()) >> (8 * i));
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), bytes.begin() + 8 + static_cast<long>(n), bytes.end());
  gptoss::test::write_bytes(dir / "model.safetensors", out);
}

gptoss_status open_status(const std::string& path, std::string* msg,
                          const gptoss::OpenOptions& o = no_tokenizer()) {
  return status_of([&] { gptoss::open_checkpoint(path, o); }, msg);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("HF checkpoint: an unmodified copy opens", "[model]") {
  TempDir dir;
  copy_hf(dir, [](nlohmann::json&) {});
  CHECK_NOTHROW(gptoss::open_checkpoint(dir.path().string(), no_tokenizer()));
}

TEST_CASE("HF checkpoint: missing tensor, wrong dtype, wrong shape name the tensor", "[model]") {
  std::string msg;
  {
    TempDir dir;
    copy_hf(dir, [](nlohmann::json& h) {
      h["model.layers.1.self_attn.sinkz"] = h["model.layers.1.self_attn.sinks"];
      h.erase("model.layers.1.self_attn.sinks");
    });
    CHECK(open_status(dir.path().string(), &msg) == gptoss_status_io);
    CHECK(contains(msg, "model.layers.1.self_attn.sinks"));
  }
  {
    TempDir dir;
    copy_hf(dir, [](nlohmann::json& h) { h["model.layers.0.self_attn.q_proj.weight"]["dtype"] = "I16"; });
    CHECK(open_status(dir.path().string(), &msg) == gptoss_status_unsupported_argument);
    CHECK(contains(msg, "model.layers.0.self_attn.q_proj.weight"));
  }
  {
    TempDir dir;
    copy_hf(dir, [](nlohmann::json& h) { h["model.layers.2.mlp.experts.down_proj_scales"]["dtype"] = "I8"; });
    CHECK(open_status(dir.path().string(), &msg) == gptoss_status_unsupported_argument);
    CHECK(contains(msg, "model.layers.2.mlp.experts.down_proj_scales"));
  }
  {
    TempDir dir;
    copy_hf(dir, [](nlohmann::json& h) { h["model.layers.3.self_attn.o_proj.weight"]["shape"] = {512, 64}; });
    CHECK(open_status(dir.path().string(), &msg) == gptoss_status_io);
    CHECK(contains(msg, "model.layers.3.self_attn.o_proj.weight"));
  }
  {
    TempDir dir;
    copy_hf(dir, [](nlohmann::json& h) {
      h["model.layers.0.mlp.experts.gate_up_proj_blocks"]["shape"] = {32, 64, 4, 16};
    });
    CHECK(open_status(dir.path().string(), &msg) == gptoss_status_io);
    CHECK(contains(msg, "gate_up_proj_blocks"));
  }
  {
    TempDir dir;  // experts stored dequantized (bf16) instead of MXFP4
    copy_hf(dir, [](nlohmann::json& h) {
      h["model.layers.0.mlp.experts.gate_up_proj"] = h["model.layers.0.mlp.experts.gate_up_proj_blocks"];
      h.erase("model.layers.0.mlp.experts.gate_up_proj_blocks");
    });
    CHECK(open_status(dir.path().string(), &msg) == gptoss_status_unsupported_argument);
    CHECK(contains(msg, "MXFP4"));
  }
}

TEST_CASE("HF checkpoint: bad paths and configs", "[model]") {
  std::string msg;
  CHECK(open_status("/nonexistent/gptoss/model", &msg) == gptoss_status_io);
  CHECK(contains(msg, "/nonexistent/gptoss/model"));
  CHECK(open_status("", &msg) == gptoss_status_invalid_argument);
  TempDir dir;
  CHECK(open_status(dir.path().string(), &msg) == gptoss_status_io);
  CHECK(contains(msg, "config.json"));
  gptoss::test::write_text(dir / "notes.txt", "hello");
  CHECK(open_status(dir / "notes.txt", &msg) == gptoss_status_io);
  gptoss::test::write_text(dir / "config.json", "{\"hidden_size\": ");
  CHECK(open_status(dir.path().string(), &msg) == gptoss_status_io);

  std::ifstream in(conformance_hf_dir() + "/config.json");
  auto config = nlohmann::json::parse(in);
  config["num_key_value_heads"] = 3;
  gptoss::test::write_text(dir / "config.json", config.dump());
  CHECK(open_status(dir.path().string(), &msg) == gptoss_status_invalid_argument);
  CHECK(contains(msg, "config.json"));
  CHECK(contains(msg, "num_kv_heads"));
  // A valid config but no weights.
  fs::copy_file(conformance_hf_dir() + "/config.json", dir / "config.json",
                fs::copy_options::overwrite_existing);
  CHECK(open_status(dir.path().string(), &msg) == gptoss_status_io);
}

// Megabytes of "[[[[...]]]]" in config.json or the shard index used to crash the load (stack
// overflow printing the value into the message); now they are errors naming the file.
TEST_CASE("HF checkpoint: deeply nested config.json or index is an error, not a crash", "[model]") {
  const size_t depth = 5'000'000;
  const std::string deep = std::string(depth, '[') + std::string(depth, ']');
  std::string msg;
  TempDir dir;
  gptoss::test::write_text(dir / "config.json", R"({"vocab_size":)" + deep + "}");
  CHECK(open_status(dir.path().string(), &msg) == gptoss_status_io);
  CHECK(contains(msg, "config.json: JSON nested deeper than 128 levels"));

  TempDir with_index;
  copy_hf(with_index, [](nlohmann::json&) {});
  gptoss::test::write_text(with_index / "model.safetensors.index.json",
                           R"({"weight_map":{"a":)" + deep + "}}");
  CHECK(open_status(with_index.path().string(), &msg) == gptoss_status_io);
  CHECK(contains(msg, "model.safetensors.index.json: JSON nested deeper than 128 levels"));

  // A value quoted in a message is cut, not copied whole.
  gptoss::test::write_text(dir / "config.json", R"({"vocab_size":")" + std::string(1 << 20, 'x') + "\"}");
  CHECK(open_status(dir.path().string(), &msg) == gptoss_status_invalid_argument);
  CHECK(contains(msg, "\"vocab_size\" must be a non-negative integer, got \"xxxx"));
  CHECK(msg.size() < 400);
}

TEST_CASE("HF checkpoint: a missing tokenizer.json is an io error naming the path", "[model]") {
  std::string msg;
  gptoss::OpenOptions o;  // loads the tokenizer: none beside the shared model-hf
  CHECK(open_status(conformance_hf_dir(), &msg, o) == gptoss_status_io);
  CHECK(contains(msg, conformance_hf_dir() + "/tokenizer.json"));
  o.tokenizer_path = "/nonexistent/tokenizer.json";
  CHECK(open_status(conformance_hf_dir(), &msg, o) == gptoss_status_io);
  CHECK(contains(msg, "/nonexistent/tokenizer.json"));
  CHECK(open_status(gptoss::test::logits_dir() + "/model.gguf", &msg, o) == gptoss_status_io);
  CHECK(contains(msg, "/nonexistent/tokenizer.json"));
}

namespace {

// The conformance GGUF with the bytes of one tensor info patched: the info starts with the
// name (u64 length + bytes), then n_dims u32, dims u64[n_dims], type u32, offset u64.
struct GgufCopy {
  std::vector<uint8_t> bytes = gptoss::test::read_bytes(gptoss::test::logits_dir() + "/model.gguf");
  size_t info(const std::string& name) {  // offset just past the name
    std::string needle(8, '\0');
    uint64_t n = name.size();
    std::memcpy(needle.data(), &n, 8);
    needle += name;
    auto it = std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end());
    REQUIRE(it != bytes.end());
    return static_cast<size_t>(it - bytes.begin()) + needle.size();
  }
  template <typename T>
  void put(size_t at, T v) { std::memcpy(bytes.data() + at, &v, sizeof v); }
};

}  // namespace

TEST_CASE("GGUF checkpoint: missing tensor, wrong type, wrong shape, other architecture",
          "[model]") {
  std::string msg;
  auto check = [&](GgufCopy& g, gptoss_status want, const std::string& part) {
    TempDir dir;
    gptoss::test::write_bytes(dir / "m.gguf", g.bytes);
    CHECK(open_status(dir / "m.gguf", &msg) == want);
    CHECK(contains(msg, part));
  };
  {
    GgufCopy g;
    const size_t at = g.info("blk.0.attn_sinks.weight");
    g.bytes[at - 2] = 'z';  // "blk.0.attn_sinkz.weight"
    check(g, gptoss_status_io, "blk.0.attn_sinks.weight");
  }
  {
    GgufCopy g;
    const size_t at = g.info("blk.0.attn_q.weight");  // [64, 512] -> [512, 64]
    g.put<uint64_t>(at + 4, 512);
    g.put<uint64_t>(at + 12, 64);
    check(g, gptoss_status_io, "blk.0.attn_q.weight");
  }
  {
    GgufCopy g;
    const size_t at = g.info("blk.1.ffn_up_exps.weight");  // MXFP4 -> Q8_0 (twice the bytes)
    g.put<uint32_t>(at + 4 + 3 * 8, 8);
    check(g, gptoss_status_unsupported_argument, "blk.1.ffn_up_exps.weight");
  }
  // gpt-oss.block_count 2^32 - 1 looped for ever (and 0xff000000 allocated 512 MB and ran
  // seconds) building the layer types (tests/fuzz/corpus/gguf/regress-huge-block-count).
  for (uint32_t layers : {0xffffffffu, 0xff000000u}) {
    GgufCopy g;
    g.put<uint32_t>(g.info("gpt-oss.block_count") + 4, layers);  // after the u32 value type
    check(g, gptoss_status_invalid_argument, "num_layers = " + std::to_string(layers));
  }
  {
    GgufCopy g;
    const std::string arch = "gpt-oss";
    auto it = std::search(g.bytes.begin(), g.bytes.end(), arch.begin(), arch.end());
    REQUIRE(it != g.bytes.end());
    *(it + 4) = 'x';  // "gpt-xss"
    check(g, gptoss_status_unsupported_argument, "gpt-xss");
  }
}
