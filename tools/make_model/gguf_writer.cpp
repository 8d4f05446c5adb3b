#include "tools/make_model/gguf_writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "libgptoss/model/canonical.hpp"
#include "libgptoss/model/dtypes.hpp"
#include "tools/make_model/output_file.hpp"
#include "tools/make_model/synthetic.hpp"
#include "tools/make_model/vocab.hpp"

namespace gptoss::make_model {
namespace {

constexpr uint64_t kAlignment = 32;
constexpr uint32_t kF32 = 0, kF16 = 1, kQ8_0 = 8, kBF16 = 30, kMXFP4 = 39;  // ggml types

enum : uint32_t { kU32 = 4, kF32Value = 6, kString = 8, kArray = 9, kI32 = 5 };  // value types

struct Planned {
  std::string name;
  uint32_t type;
  std::vector<int64_t> ne;  // fastest dimension first
  uint64_t bytes;
  std::function<void(OutputFile&)> write;
};

// Streams `n` generated values as f32, bf16 or f16 (`type`, a ggml type); value(i) gives
// element i of the GGUF tensor.
template <typename Value>
std::function<void(OutputFile&)> dense_writer(uint64_t n, uint32_t type, Value value) {
  return [n, type, value](OutputFile& f) {
    const size_t width = type == kF32 ? 4 : 2;
    std::vector<uint8_t> buf;
    for (uint64_t i = 0; i < n; i += 1u << 20) {
      const uint64_t m = std::min<uint64_t>(1u << 20, n - i);
      buf.resize(m * width);
      for (uint64_t k = 0; k < m; ++k) {
        const float v = value(i + k);
        if (type == kF32) {
          std::memcpy(&buf[4 * k], &v, 4);
        } else {
          const uint16_t h = type == kBF16 ? f32_to_bf16(v) : f32_to_f16(v);
          std::memcpy(&buf[2 * k], &h, 2);
        }
      }
      f.write(buf.data(), buf.size());
    }
  };
}

// Streams `n` generated values as ggml Q8_0 blocks (as llama.cpp's quantize_row_q8_0:
// d = max|x| / 127 stored as f16, q = round(x / d)); n % 32 == 0.
template <typename Value>
std::function<void(OutputFile&)> q8_0_writer(uint64_t n, Value value) {
  return [n, value](OutputFile& f) {
    std::vector<uint8_t> buf;
    for (uint64_t i = 0; i < n; i += 32u << 15) {
      const uint64_t blocks = std::min<uint64_t>(1u << 15, (n - i) / 32);
      buf.resize(blocks * 34);
      for (uint64_t b = 0; b < blocks; ++b) {
        float v[32], amax = 0.0f;
        for (int j = 0; j < 32; ++j) {
          v[j] = value(i + 32 * b + uint64_t(j));
          amax = std::max(amax, std::fabs(v[j]));
        }
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t dh = f32_to_f16(d);
        std::memcpy(&buf[34 * b], &dh, 2);
        for (int j = 0; j < 32; ++j) buf[34 * b + 2 + uint64_t(j)] = uint8_t(int8_t(std::lround(v[j] * id)));
      }
      f.write(buf.data(), buf.size());
    }
  };
}

std::vector<Planned> plan(const ModelConfig& config, uint64_t seed, const std::string& dense_type) {
  std::vector<Planned> out;
  for (const TensorSpec& s : canonical_tensors(config, config.num_layers)) {
    const std::string p = "blk." + std::to_string(s.layer) + ".";
    std::vector<int64_t> ne(s.shape.rbegin(), s.shape.rend());
    uint64_t n = 1;
    for (int64_t d : ne) n *= static_cast<uint64_t>(d);
    // matrix: one of the 2-D weights llama.cpp stores in the file's dense type.
    auto dense = [&](const std::string& name, bool matrix) {
      DenseGenerator gen = dense_generator(s, seed);
      if (matrix && dense_type == "q8_0") {
        out.push_back({name, kQ8_0, ne, n / 32 * 34, q8_0_writer(n, gen)});
      } else {
        const uint32_t type = !matrix ? kF32 : dense_type == "f16" ? kF16 : kBF16;
        out.push_back({name, type, ne, n * (type == kF32 ? 4 : 2), dense_writer(n, type, gen)});
      }
    };
    switch (s.role) {
      case gptoss_tensor_embedding: dense("token_embd.weight", true); break;
      case gptoss_tensor_unembedding: dense("output.weight", true); break;
      case gptoss_tensor_final_norm: dense("output_norm.weight", false); break;
      case gptoss_tensor_attn_norm: dense(p + "attn_norm.weight", false); break;
      case gptoss_tensor_attn_q: dense(p + "attn_q.weight", true); break;
      case gptoss_tensor_attn_q_bias: dense(p + "attn_q.bias", false); break;
      case gptoss_tensor_attn_k: dense(p + "attn_k.weight", true); break;
      case gptoss_tensor_attn_k_bias: dense(p + "attn_k.bias", false); break;
      case gptoss_tensor_attn_v: dense(p + "attn_v.weight", true); break;
      case gptoss_tensor_attn_v_bias: dense(p + "attn_v.bias", false); break;
      case gptoss_tensor_attn_out: dense(p + "attn_output.weight", true); break;
      case gptoss_tensor_attn_out_bias: dense(p + "attn_output.bias", false); break;
      case gptoss_tensor_attn_sinks: dense(p + "attn_sinks.weight", false); break;
      case gptoss_tensor_mlp_norm: dense(p + "post_attention_norm.weight", false); break;
      case gptoss_tensor_router: dense(p + "ffn_gate_inp.weight", false); break;
      case gptoss_tensor_router_bias: dense(p + "ffn_gate_inp.bias", false); break;
      case gptoss_tensor_mlp2_bias: dense(p + "ffn_down_exps.bias", false); break;
      case gptoss_tensor_mlp1_bias: {
        // Canonical [E, 2I] interleaved: gate = even columns, up = odd.
        DenseGenerator gen = dense_generator(s, seed);
        const uint64_t half = static_cast<uint64_t>(s.shape[1]) / 2;
        std::vector<int64_t> half_ne = {ne[0] / 2, ne[1]};
        for (uint64_t up = 0; up < 2; ++up)
          out.push_back({p + (up ? "ffn_up_exps.bias" : "ffn_gate_exps.bias"), kF32, half_ne, n * 2,
                         dense_writer(n / 2, kF32, [gen, half, up](uint64_t i) {
                           return gen((i / half) * 2 * half + 2 * (i % half) + up);
                         })});
        break;
      }
      case gptoss_tensor_mlp1:
      case gptoss_tensor_mlp2: {
        // ggml block_mxfp4 = scale byte + 16 bytes with element j low and j+16 high. For mlp1,
        // row r of gate (up) is canonical row 2r (2r+1) of the same expert.
        Mxfp4Generator gen = mxfp4_generator(s, seed);
        const uint64_t rows = static_cast<uint64_t>(s.shape[1]), blocks = s.shape[2] / 32;
        const bool split = s.role == gptoss_tensor_mlp1;
        for (uint64_t part = 0; part < (split ? 2u : 1u); ++part) {
          const uint64_t out_rows = split ? rows / 2 : rows;
          std::vector<int64_t> part_ne = {ne[0], static_cast<int64_t>(out_rows), ne[2]};
          const uint64_t total_rows = out_rows * static_cast<uint64_t>(s.shape[0]);
          const std::string name = split ? p + (part ? "ffn_up_exps.weight" : "ffn_gate_exps.weight")
                                         : p + "ffn_down_exps.weight";
          out.push_back({name, kMXFP4, part_ne, total_rows * blocks * 17,
                         [=](OutputFile& f) {
                           std::vector<uint8_t> row(blocks * 17);
                           uint8_t openai[16];
                           for (uint64_t r = 0; r < total_rows; ++r) {
                             const uint64_t e = r / out_rows, i = r % out_rows;
                             const uint64_t crow = split ? 2 * i + part : i;
                             for (uint64_t b = 0; b < blocks; ++b) {
                               gen.block((e * rows + crow) * blocks + b, openai, &row[17 * b]);
                               mxfp4_openai_to_ggml(openai, &row[17 * b + 1]);
                             }
                             f.write(row.data(), row.size());
                           }
                         }});
        }
        break;
      }
    }
  }
  return out;
}

// Writes metadata key-value pairs; with no file it only counts them (the count comes first).
class KvWriter {
 public:
  explicit KvWriter(OutputFile* f) : f_(f) {}
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    write(s.data(), s.size());
  }
  void key(const std::string& k, uint32_t type) {
    str(k);
    put<uint32_t>(type);
    ++count_;
  }
  void u32(const std::string& k, uint32_t v) { key(k, kU32); put(v); }
  void f32(const std::string& k, float v) { key(k, kF32Value); put(v); }
  void string(const std::string& k, const std::string& v) { key(k, kString); str(v); }
  void strings(const std::string& k, const std::vector<std::string>& v) {
    key(k, kArray);
    put<uint32_t>(kString);
    put<uint64_t>(v.size());
    for (const auto& s : v) str(s);
  }
  void i32s(const std::string& k, const std::vector<int32_t>& v) {
    key(k, kArray);
    put<uint32_t>(kI32);
    put<uint64_t>(v.size());
    write(v.data(), v.size() * 4);
  }
  uint64_t count() const { return count_; }

 private:
  void write(const void* p, size_t n) {
    if (f_) f_->write(p, n);
  }
  template <typename T>
  void put(T v) { write(&v, sizeof v); }

  OutputFile* f_;
  uint64_t count_ = 0;
};

// The metadata keys llama.cpp's convert_hf_to_gguf.py writes for architecture gpt-oss.
void write_metadata(KvWriter& kv, const ModelConfig& c, const GgufOptions& o, const GgufVocab* vocab) {
  const std::string a = "gpt-oss.";
  kv.string("general.architecture", "gpt-oss");
  kv.string("general.type", "model");
  kv.string("general.name", o.name);
  kv.u32(a + "block_count", c.num_layers);
  kv.u32(a + "context_length", c.max_context_length);
  kv.u32(a + "embedding_length", c.hidden_size);
  kv.u32(a + "feed_forward_length", c.intermediate_size);
  kv.u32(a + "attention.head_count", c.num_heads);
  kv.u32(a + "attention.head_count_kv", c.num_kv_heads);
  kv.string(a + "rope.scaling.type", "yarn");
  kv.f32(a + "rope.scaling.factor", static_cast<float>(c.rope_scaling_factor));
  kv.u32(a + "rope.scaling.original_context_length", static_cast<uint32_t>(c.rope_original_context));
  kv.f32(a + "rope.scaling.yarn_beta_fast", static_cast<float>(c.rope_beta_fast));
  kv.f32(a + "rope.scaling.yarn_beta_slow", static_cast<float>(c.rope_beta_slow));
  kv.f32(a + "rope.freq_base", static_cast<float>(c.rope_theta));
  kv.f32(a + "attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  kv.u32(a + "expert_count", c.num_experts);
  kv.u32(a + "expert_used_count", c.experts_per_token);
  kv.u32(a + "attention.key_length", c.head_dim);
  kv.u32(a + "attention.value_length", c.head_dim);
  kv.u32("general.file_type", 38);  // LLAMA_FTYPE_MOSTLY_MXFP4_MOE
  kv.u32(a + "attention.sliding_window", c.sliding_window);
  kv.u32(a + "expert_feed_forward_length", c.intermediate_size);
  kv.u32("general.quantization_version", 2);
  if (!vocab) return;
  kv.string("tokenizer.ggml.model", "gpt2");
  kv.string("tokenizer.ggml.pre", "gpt-4o");
  kv.strings("tokenizer.ggml.tokens", vocab->tokens);
  kv.i32s("tokenizer.ggml.token_type", vocab->token_types);
  if (!vocab->merges.empty()) kv.strings("tokenizer.ggml.merges", vocab->merges);
  kv.u32("tokenizer.ggml.bos_token_id", 199998);
  kv.u32("tokenizer.ggml.eos_token_id", 200002);
  kv.u32("tokenizer.ggml.padding_token_id", 199999);
}

uint64_t count_metadata(const ModelConfig& c, const GgufOptions& o, const GgufVocab* vocab) {
  KvWriter kv(nullptr);
  write_metadata(kv, c, o, vocab);
  return kv.count();
}

}  // namespace

void write_gguf(const ModelConfig& config, const GgufOptions& o) {
  GgufVocab vocab;
  if (!o.tokenizer_json.empty()) vocab = read_vocab(o.tokenizer_json, config.vocab_size);
  const GgufVocab* v = o.tokenizer_json.empty() ? nullptr : &vocab;
  if (o.dense_type != "bf16" && o.dense_type != "f16" && o.dense_type != "q8_0")
    fail(gptoss_status_invalid_argument, "dense type must be bf16, f16 or q8_0, not {}", o.dense_type);
  const std::vector<Planned> tensors = plan(config, o.seed, o.dense_type);

  OutputFile f(o.path);
  f.put<uint32_t>(0x46554747);  // "GGUF"
  f.put<uint32_t>(3);
  f.put<uint64_t>(tensors.size());
  f.put<uint64_t>(count_metadata(config, o, v));
  KvWriter kv(&f);
  write_metadata(kv, config, o, v);
  uint64_t offset = 0;
  for (const Planned& t : tensors) {
    kv.str(t.name);
    f.put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) f.put<uint64_t>(static_cast<uint64_t>(d));
    f.put<uint32_t>(t.type);
    f.put<uint64_t>(offset);
    offset += (t.bytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  f.pad_to(kAlignment);
  const uint64_t data_start = f.written();
  for (const Planned& t : tensors) {
    t.write(f);
    f.pad_to(kAlignment);
  }
  if (f.written() - data_start != offset)
    fail(gptoss_status_internal, "GGUF data section is {} bytes, planned {}", f.written() - data_start, offset);
  f.close();
}

}  // namespace gptoss::make_model
