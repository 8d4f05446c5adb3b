#include "tools/make_model/hf_writer.hpp"

#include <filesystem>
#include <functional>

#include <nlohmann/json.hpp>

#include "libgptoss/model/canonical.hpp"
#include "libgptoss/model/dtypes.hpp"
#include "tools/make_model/output_file.hpp"
#include "tools/make_model/synthetic.hpp"

namespace gptoss::make_model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kChunk = 1u << 20;  // elements or blocks generated per step

struct Planned {
  std::string name, dtype;
  std::vector<int64_t> shape;
  uint64_t bytes;
  std::function<void(OutputFile&)> write;
};

uint64_t product(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

std::vector<Planned> plan(const ModelConfig& config, uint64_t seed) {
  std::vector<Planned> out;
  for (const TensorSpec& s : canonical_tensors(config, config.num_layers)) {
    const uint64_t n = product(s.shape);
    if (!s.mxfp4) {
      DenseGenerator gen = dense_generator(s, seed);
      out.push_back({hf_tensor_name(s), "BF16", s.shape, n * 2, [gen, n](OutputFile& f) {
                       std::vector<uint16_t> buf(std::min(n, kChunk));
                       for (uint64_t i = 0; i < n; i += buf.size()) {
                         const uint64_t m = std::min<uint64_t>(buf.size(), n - i);
                         for (uint64_t k = 0; k < m; ++k) buf[k] = f32_to_bf16(gen(i + k));
                         f.write(buf.data(), m * 2);
                       }
                     }});
      continue;
    }
    // [E, rows, cols] -> blocks U8 [E, rows, cols/32, 16], scales U8 [E, rows, cols/32].
    Mxfp4Generator gen = mxfp4_generator(s, seed);
    const uint64_t blocks = n / 32;
    auto writer = [gen, blocks](bool scales) {
      return [gen, blocks, scales](OutputFile& f) {
        std::vector<uint8_t> data(kChunk * 16), sc(kChunk);
        for (uint64_t b = 0; b < blocks; b += kChunk) {
          const uint64_t m = std::min(kChunk, blocks - b);
          for (uint64_t k = 0; k < m; ++k) gen.block(b + k, &data[16 * k], &sc[k]);
          scales ? f.write(sc.data(), m) : f.write(data.data(), 16 * m);
        }
      };
    };
    std::vector<int64_t> bshape = {s.shape[0], s.shape[1], s.shape[2] / 32, 16};
    out.push_back({hf_tensor_name(s) + "_blocks", "U8", bshape, blocks * 16, writer(false)});
    bshape.pop_back();
    out.push_back({hf_tensor_name(s) + "_scales", "U8", bshape, blocks, writer(true)});
  }
  return out;
}

// A float field as the shortest decimal that reads back as the same float ("1e-05"), the way
// the published config.json spells it.
double shortest(float v) { return std::stod(fmt::format("{}", v)); }

json config_json(const ModelConfig& c) {
  json layer_types = json::array();
  for (bool sliding : c.layer_is_sliding)
    layer_types.push_back(sliding ? "sliding_attention" : "full_attention");
  return {
      {"architectures", {"GptOssForCausalLM"}},
      {"attention_bias", true},
      {"attention_dropout", 0.0},
      {"eos_token_id", 200002},
      {"experts_per_token", c.experts_per_token},
      {"head_dim", c.head_dim},
      {"hidden_act", "silu"},
      {"hidden_size", c.hidden_size},
      {"initial_context_length", static_cast<uint32_t>(c.rope_original_context)},
      {"initializer_range", 0.02},
      {"intermediate_size", c.intermediate_size},
      {"layer_types", layer_types},
      {"max_position_embeddings", c.max_context_length},
      {"model_type", "gpt_oss"},
      {"num_attention_heads", c.num_heads},
      {"num_experts_per_tok", c.experts_per_token},
      {"num_hidden_layers", c.num_layers},
      {"num_key_value_heads", c.num_kv_heads},
      {"num_local_experts", c.num_experts},
      {"output_router_logits", false},
      {"pad_token_id", 199999},
      {"quantization_config",
       {{"modules_to_not_convert",
         {"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
          "lm_head"}},
        {"quant_method", "mxfp4"}}},
      {"rms_norm_eps", shortest(c.rms_norm_eps)},
      {"rope_scaling",
       {{"beta_fast", c.rope_beta_fast},
        {"beta_slow", c.rope_beta_slow},
        {"factor", c.rope_scaling_factor},
        {"original_max_position_embeddings", static_cast<uint32_t>(c.rope_original_context)},
        {"rope_type", "yarn"},
        {"truncate", c.rope_truncate}}},
      {"rope_theta", c.rope_theta},
      {"router_aux_loss_coef", 0.9},
      {"sliding_window", c.sliding_window},
      {"swiglu_limit", shortest(c.swiglu_limit)},
      {"tie_word_embeddings", false},
      {"torch_dtype", "bfloat16"},
      {"use_cache", true},
      {"vocab_size", c.vocab_size}};
}

void write_text(const fs::path& path, const std::string& text) {
  OutputFile f(path.string());
  f.write(text.data(), text.size());
  f.close();
}

void write_shard(const fs::path& path, const std::vector<const Planned*>& tensors) {
  json header = {{"__metadata__", {{"format", "pt"}}}};
  uint64_t offset = 0;
  for (const Planned* t : tensors) {
    header[t->name] = {{"dtype", t->dtype}, {"shape", t->shape}, {"data_offsets", {offset, offset + t->bytes}}};
    offset += t->bytes;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // keep the data 8-byte aligned, as safetensors does
  OutputFile f(path.string());
  f.put<uint64_t>(h.size());
  f.write(h.data(), h.size());
  for (const Planned* t : tensors) {
    const uint64_t before = f.written();
    t->write(f);
    if (f.written() - before != t->bytes)
      fail(gptoss_status_internal, "{}: wrote {} bytes, planned {}", t->name, f.written() - before, t->bytes);
  }
  f.close();
}

}  // namespace

void write_hf(const ModelConfig& config, const HfOptions& o) {
  const fs::path dir(o.directory);
  fs::create_directories(dir);
  write_text(dir / "config.json", config_json(config).dump(2) + "\n");
  write_text(dir / "generation_config.json",
             json{{"bos_token_id", 199998}, {"do_sample", true}, {"eos_token_id", {200002, 199999, 200012}},
                  {"pad_token_id", 199999}}.dump(2) + "\n");
  if (!o.tokenizer_json.empty())
    fs::copy_file(o.tokenizer_json, dir / "tokenizer.json", fs::copy_options::overwrite_existing);

  const std::vector<Planned> tensors = plan(config, o.seed);
  std::vector<std::vector<const Planned*>> shards(1);
  uint64_t shard_size = 0;
  for (const Planned& t : tensors) {
    if (o.shard_bytes && shard_size > 0 && shard_size + t.bytes > o.shard_bytes) {
      shards.emplace_back();
      shard_size = 0;
    }
    shards.back().push_back(&t);
    shard_size += t.bytes;
  }
  if (!o.shard_bytes) {
    write_shard(dir / "model.safetensors", shards[0]);
    return;
  }
  json weight_map = json::object();
  uint64_t total = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string name = fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, shards.size());
    write_shard(dir / name, shards[i]);
    for (const Planned* t : shards[i]) {
      weight_map[t->name] = name;
      total += t->bytes;
    }
  }
  write_text(dir / "model.safetensors.index.json",
             json{{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}}.dump(2) + "\n");
}

}  // namespace gptoss::make_model
