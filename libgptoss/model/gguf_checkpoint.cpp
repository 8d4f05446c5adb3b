// A llama.cpp GGUF of gpt-oss (convert_hf_to_gguf.py, architecture "gpt-oss"). Dense tensors
// are handed out zero-copy in their GGUF type; the experts, which llama.cpp stores as separate
// gate / up / down tensors in ggml's MXFP4 block layout, are converted per tensor to the
// canonical interleaved OpenAI layout in a buffer reused from tensor to tensor; once the
// backend has its copy, the file's pages of those tensors leave the process.
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#include "libgptoss/common/error.hpp"
#include "libgptoss/common/log.hpp"
#include "libgptoss/model/canonical.hpp"
#include "libgptoss/model/dtypes.hpp"
#include "libgptoss/model/formats/gguf.hpp"
#include "libgptoss/model/loaders.hpp"

namespace gptoss {
namespace {

using gguf::GgmlType;

constexpr size_t kMxfp4BlockBytes = 17;  // ggml block_mxfp4: u8 e, u8 qs[16]

std::string gguf_name(const TensorSpec& s, const char* gate_or_up = "gate") {
  const std::string p = fmt::format("blk.{}.", s.layer);
  switch (s.role) {
    case gptoss_tensor_embedding: return "token_embd.weight";
    case gptoss_tensor_unembedding: return "output.weight";
    case gptoss_tensor_final_norm: return "output_norm.weight";
    case gptoss_tensor_attn_norm: return p + "attn_norm.weight";
    case gptoss_tensor_attn_q: return p + "attn_q.weight";
    case gptoss_tensor_attn_q_bias: return p + "attn_q.bias";
    case gptoss_tensor_attn_k: return p + "attn_k.weight";
    case gptoss_tensor_attn_k_bias: return p + "attn_k.bias";
    case gptoss_tensor_attn_v: return p + "attn_v.weight";
    case gptoss_tensor_attn_v_bias: return p + "attn_v.bias";
    case gptoss_tensor_attn_out: return p + "attn_output.weight";
    case gptoss_tensor_attn_out_bias: return p + "attn_output.bias";
    case gptoss_tensor_attn_sinks: return p + "attn_sinks.weight";
    case gptoss_tensor_mlp_norm: return p + "post_attention_norm.weight";
    case gptoss_tensor_router: return p + "ffn_gate_inp.weight";
    case gptoss_tensor_router_bias: return p + "ffn_gate_inp.bias";
    case gptoss_tensor_mlp1: return p + "ffn_" + gate_or_up + "_exps.weight";
    case gptoss_tensor_mlp1_bias: return p + "ffn_" + gate_or_up + "_exps.bias";
    case gptoss_tensor_mlp2: return p + "ffn_down_exps.weight";
    case gptoss_tensor_mlp2_bias: return p + "ffn_down_exps.bias";
  }
  fail(gptoss_status_internal, "no GGUF name for role {}", static_cast<int>(s.role));
}

std::optional<gptoss_dtype> dense_dtype(GgmlType t) {
  switch (t) {
    case GgmlType::f32: return gptoss_dtype_f32;
    case GgmlType::f16: return gptoss_dtype_f16;
    case GgmlType::bf16: return gptoss_dtype_bf16;
    case GgmlType::q8_0: return gptoss_dtype_q8_0;
    case GgmlType::mxfp4: break;
  }
  return std::nullopt;
}

// How a canonical tensor is made from GGUF tensors: one dense tensor, or (experts) the
// gate/up pair to interleave, or down alone.
struct Binding {
  const gguf::TensorInfo* a;
  const gguf::TensorInfo* b;  // up (mlp1, mlp1_bias); else null
  gptoss_dtype dtype;
};

// The buffer converted tensors are written to, one pass over the tensors long: reused from
// tensor to tensor (a fresh 280 MB buffer per expert tensor of the 20b spent more time in
// page faults and zeroing than in the conversion), uninitialised (every byte is written).
class ConversionBuffer {
 public:
  uint8_t* get(size_t bytes, const std::string& name) {
    if (bytes > size_) {
      buf_.reset();
      try {
        buf_.reset(new uint8_t[bytes]);
      } catch (const std::bad_alloc&) {
        fail(gptoss_status_insufficient_memory, "cannot allocate {} bytes to convert {}", bytes, name);
      }
      size_ = bytes;
    }
    return buf_.get();
  }

 private:
  std::unique_ptr<uint8_t[]> buf_;
  size_t size_ = 0;
};

// Rows of ggml MXFP4 blocks -> canonical data + scales. `src(r)` gives the ggml row that
// becomes canonical row r (all rows have `blocks` blocks). Rows are split over the cores:
// this is most of a GGUF load (11 GB of experts for the 20b).
template <typename RowSource>
void convert_mxfp4_rows(size_t rows, size_t blocks, RowSource src, uint8_t* data,
                        uint8_t* scales) {
  auto part = [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; ++r) {
      const uint8_t* in = src(r);
      for (size_t b = 0; b < blocks; ++b, in += kMxfp4BlockBytes) {
        scales[r * blocks + b] = in[0];
        mxfp4_ggml_to_openai(in + 1, data + (r * blocks + b) * 16);
      }
    }
  };
  const size_t n = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 16);
  if (n == 1 || rows < 1024) return part(0, rows);
  std::vector<std::thread> threads;
  threads.reserve(n - 1);  // emplace_back below then only throws if a thread cannot start
  try {
    for (size_t t = 1; t < n; ++t) threads.emplace_back(part, rows * t / n, rows * (t + 1) / n);
  } catch (const std::system_error&) {  // no more threads: the calling one does the rest
  }
  const size_t done = threads.size() + 1;
  part(0, rows / n);
  if (done < n) part(rows * done / n, rows);
  for (auto& th : threads) th.join();
}

class GgufCheckpoint final : public WeightSource {
 public:
  GgufCheckpoint(const std::string& path, const OpenOptions& options)
      : file_(std::make_unique<gguf::File>(path, options.use_mmap)) {
    config_ = read_config();
    specs_ = canonical_tensors(config_, config_.num_layers);
    for (const auto& s : specs_) bindings_.push_back(bind(s));
    if (options.load_tokenizer) tokenizer_ = read_tokenizer(options);
    log().info("opened {}: GGUF v{}, {} layers, {} tensors", path, file_->version(),
               config_.num_layers, file_->tensors().size());
  }

  const ModelConfig& config() const override { return config_; }
  const char* format() const override { return "gguf"; }
  std::shared_ptr<const Tokenizer> tokenizer() const override { return tokenizer_; }

  std::vector<gptoss_tensor_desc> tensor_shapes(uint32_t num_layers) const override {
    std::vector<gptoss_tensor_desc> out;
    for_each_spec(specs_, num_layers, config_.num_layers,
                  [&](size_t i) { out.push_back(make_shape_desc(specs_[i], bindings_[i].dtype)); });
    return out;
  }

  void for_each_tensor(uint32_t num_layers,
                       const std::function<void(const gptoss_tensor_desc&)>& fn) const override {
    ConversionBuffer buf;
    for_each_spec(specs_, num_layers, config_.num_layers, [&](size_t i) {
      const TensorSpec& s = specs_[i];
      const Binding& b = bindings_[i];
      gptoss_tensor_desc d = make_desc(s, b.dtype);
      if (s.mxfp4) {
        emit_mxfp4(s, b, d, fn, buf);
      } else if (b.b) {
        emit_interleaved_bias(s, b, d, fn, buf);
      } else {
        d.data = b.a->data;
        d.data_size = b.a->size;
        d.flags = GPTOSS_TENSOR_PERSISTENT;
        fn(d);
      }
    });
  }

 private:
  ModelConfig read_config() const {
    const std::string& path = file_->path();
    const auto arch = file_->get_string("general.architecture");
    if (arch != "gpt-oss")
      fail(gptoss_status_unsupported_argument,
           "{}: general.architecture is \"{}\", not a gpt-oss model (\"gpt-oss\")", path,
           arch.value_or("(missing)"));
    auto req_uint = [&](const char* key) -> uint32_t {
      auto v = file_->get_uint(std::string("gpt-oss.") + key);
      if (!v) fail(gptoss_status_io, "{}: missing metadata gpt-oss.{}", path, key);
      if (*v > UINT32_MAX) fail(gptoss_status_invalid_argument, "{}: gpt-oss.{} = {} is too large", path, key, *v);
      return static_cast<uint32_t>(*v);
    };
    auto opt_uint = [&](const char* key, uint32_t fallback) -> uint32_t {
      return file_->get_uint(std::string("gpt-oss.") + key) ? req_uint(key) : fallback;
    };
    auto opt_float = [&](const char* key, double fallback) {
      return file_->get_float(std::string("gpt-oss.") + key).value_or(fallback);
    };

    ModelConfig c;
    c.num_layers = req_uint("block_count");
    c.hidden_size = req_uint("embedding_length");
    c.num_heads = req_uint("attention.head_count");
    c.num_kv_heads = opt_uint("attention.head_count_kv", c.num_heads);
    c.head_dim = opt_uint("attention.key_length", c.num_heads ? c.hidden_size / c.num_heads : 0);
    if (opt_uint("attention.value_length", c.head_dim) != c.head_dim)
      fail(gptoss_status_unsupported_argument, "{}: key and value head sizes differ", path);
    c.num_experts = req_uint("expert_count");
    c.experts_per_token = req_uint("expert_used_count");
    c.intermediate_size = opt_uint("expert_feed_forward_length", opt_uint("feed_forward_length", 0));
    c.max_context_length = opt_uint("context_length", c.max_context_length);
    c.rms_norm_eps = static_cast<float>(opt_float("attention.layer_norm_rms_epsilon", 1e-5));
    c.rope_theta = opt_float("rope.freq_base", c.rope_theta);
    // llama.cpp has no key for the SwiGLU clamp (it hard-codes gpt-oss's 7.0) nor for ramp
    // truncation; the reference does not truncate.
    c.swiglu_limit = 7.0f;
    c.rope_truncate = false;
    const auto scaling = file_->get_string("gpt-oss.rope.scaling.type");
    if (scaling && *scaling != "yarn" && *scaling != "none")
      fail(gptoss_status_unsupported_argument, "{}: rope scaling \"{}\" is not supported", path, *scaling);
    if (scaling == "yarn") {
      c.rope_scaling_factor = opt_float("rope.scaling.factor", 1.0);
      c.rope_original_context = opt_uint("rope.scaling.original_context_length", 4096);
      c.rope_beta_fast = opt_float("rope.scaling.yarn_beta_fast", 32.0);
      c.rope_beta_slow = opt_float("rope.scaling.yarn_beta_slow", 1.0);
    } else {
      c.rope_scaling_factor = 1.0;
    }
    // gpt-oss alternates sliding (even layers) and full attention; llama.cpp encodes only the
    // window size.
    c.sliding_window = opt_uint("attention.sliding_window", 0);
    c.layer_is_sliding.assign(c.num_layers, false);
    for (uint32_t l = 0; l < c.num_layers && c.sliding_window > 0; l += 2) c.layer_is_sliding[l] = true;
    // The vocabulary is the embedding's row count (the tokenizer may list fewer strings).
    const auto* emb = file_->find_tensor("token_embd.weight");
    if (!emb || emb->ne.size() != 2) fail(gptoss_status_io, "{}: missing tensor token_embd.weight (2-D)", path);
    c.vocab_size = emb->ne[1] > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(emb->ne[1]);
    try {
      c.validate();
    } catch (const Error& e) {
      throw Error(e.status(), fmt::format("{}: {}", path, e.what()));
    }
    return c;
  }

  const gguf::TensorInfo& require(const std::string& name, const TensorSpec& s,
                                  const std::vector<int64_t>& shape) const {
    const auto* t = file_->find_tensor(name);
    if (!t) fail(gptoss_status_io, "{}: missing tensor {} (for {})", file_->path(), name, s.name);
    // GGUF lists the fastest dimension first; canonical shapes list it last.
    std::vector<int64_t> canonical(t->ne.rbegin(), t->ne.rend());
    if (canonical != shape)
      fail(gptoss_status_io, "{}: tensor {} has shape {} (outermost first), the config implies {}",
           file_->path(), name, shape_string(canonical), shape_string(shape));
    return *t;
  }

  Binding bind(const TensorSpec& s) const {
    const bool paired = s.role == gptoss_tensor_mlp1 || s.role == gptoss_tensor_mlp1_bias;
    std::vector<int64_t> shape = s.shape;
    if (paired) shape[1] /= 2;  // gate and up each hold half of the interleaved rows
    const auto& a = require(gguf_name(s, "gate"), s, shape);
    const gguf::TensorInfo* b = paired ? &require(gguf_name(s, "up"), s, shape) : nullptr;
    if (s.mxfp4) {
      for (const auto* t : {&a, b})
        if (t && t->type != GgmlType::mxfp4)
          fail(gptoss_status_unsupported_argument, "{}: tensor {} is {}, expected MXFP4",
               file_->path(), t->name, gguf::ggml_type_name(static_cast<uint32_t>(t->type)));
      return {&a, b, gptoss_dtype_mxfp4};
    }
    auto dtype = dense_dtype(a.type);
    if (!dtype || (b && b->type != a.type) || (paired && *dtype == gptoss_dtype_q8_0))
      fail(gptoss_status_unsupported_argument, "{}: tensor {} has type {}{}", file_->path(),
           a.name, gguf::ggml_type_name(static_cast<uint32_t>(a.type)),
           b ? " (gate and up biases must share one of F32, F16, BF16)"
             : ", expected F32, F16, BF16 or Q8_0");
    return {&a, b, *dtype};
  }

  // mlp1: canonical row 2i = gate row i, 2i+1 = up row i; mlp2: rows as they are.
  void emit_mxfp4(const TensorSpec& s, const Binding& b, gptoss_tensor_desc& d,
                  const std::function<void(const gptoss_tensor_desc&)>& fn,
                  ConversionBuffer& buf) const {
    const size_t experts = s.shape[0], rows = s.shape[1], blocks = s.shape[2] / 32;
    const size_t total_blocks = experts * rows * blocks;
    uint8_t* data = buf.get(total_blocks * kMxfp4BlockBytes, s.name);
    uint8_t* scales = data + total_blocks * 16;
    const size_t row_bytes = blocks * kMxfp4BlockBytes;
    if (b.b) {
      convert_mxfp4_rows(experts * rows, blocks, [&](size_t r) {
        const size_t e = r / rows, i = r % rows;
        const gguf::TensorInfo* src = i % 2 == 0 ? b.a : b.b;
        return src->data + (e * (rows / 2) + i / 2) * row_bytes;
      }, data, scales);
    } else {
      convert_mxfp4_rows(experts * rows, blocks, [&](size_t r) { return b.a->data + r * row_bytes; },
                         data, scales);
    }
    d.data = data;
    d.data_size = total_blocks * 16;
    d.scales = scales;
    d.scales_size = total_blocks;
    d.flags = 0;  // the buffer is reused for the next tensor
    fn(d);
    // The backend has its own copy now: the file's pages of these tensors leave the process
    // (peak RSS stays one copy of the experts; they fault back in if ever read again).
    file_->release(*b.a);
    if (b.b) file_->release(*b.b);
  }

  void emit_interleaved_bias(const TensorSpec& s, const Binding& b, gptoss_tensor_desc& d,
                             const std::function<void(const gptoss_tensor_desc&)>& fn,
                             ConversionBuffer& buf) const {
    const size_t esize = b.a->size / (s.shape[0] * s.shape[1] / 2);
    const size_t n = s.shape[0] * s.shape[1];
    uint8_t* out = buf.get(n * esize, s.name);
    for (size_t k = 0; k < n; ++k) {
      const gguf::TensorInfo* src = k % 2 == 0 ? b.a : b.b;
      std::memcpy(out + k * esize, src->data + (k / 2) * esize, esize);
    }
    d.data = out;
    d.data_size = n * esize;
    d.flags = 0;
    fn(d);
  }

  std::shared_ptr<const Tokenizer> read_tokenizer(const OpenOptions& options) const {
    if (!options.tokenizer_path.empty()) return load_tokenizer_json(options.tokenizer_path);
    auto tokens = file_->get_string_array("tokenizer.ggml.tokens");
    auto types = file_->get_int_array("tokenizer.ggml.token_type");
    if (!tokens || !types)
      fail(gptoss_status_io, "{}: no tokenizer.ggml.tokens / token_type metadata (pass a "
           "tokenizer.json path instead)", file_->path());
    if (tokens->size() != types->size())
      fail(gptoss_status_io, "{}: {} tokens but {} token types", file_->path(), tokens->size(),
           types->size());
    std::vector<int32_t> types32;
    types32.reserve(types->size());
    for (int64_t t : *types) {
      if (t < INT32_MIN || t > INT32_MAX) fail(gptoss_status_io, "{}: token type {} out of range", file_->path(), t);
      types32.push_back(static_cast<int32_t>(t));
    }
    return Tokenizer::from_vocab(*tokens, types32);
  }

  std::unique_ptr<gguf::File> file_;
  ModelConfig config_;
  std::vector<TensorSpec> specs_;
  std::vector<Binding> bindings_;
  std::shared_ptr<const Tokenizer> tokenizer_;
};

}  // namespace

std::unique_ptr<WeightSource> open_gguf_checkpoint(const std::string& file,
                                                   const OpenOptions& options) {
  return std::make_unique<GgufCheckpoint>(file, options);
}

}  // namespace gptoss
