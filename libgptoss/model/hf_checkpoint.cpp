// Hugging Face checkpoint directory as published for openai/gpt-oss-20b/120b: config.json,
// safetensors shard(s), tokenizer.json. Its tensors already are in canonical form, so they are
// handed out zero-copy; all of them are checked against the config when the directory opens.
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "libgptoss/common/error.hpp"
#include "libgptoss/common/log.hpp"
#include "libgptoss/model/canonical.hpp"
#include "libgptoss/model/formats/safetensors.hpp"
#include "libgptoss/model/loaders.hpp"

namespace gptoss {
namespace {

namespace fs = std::filesystem;

struct Binding {
  const safetensors::TensorInfo* data;
  const safetensors::TensorInfo* scales;  // mxfp4 only
  gptoss_dtype dtype;
};

class HfCheckpoint final : public WeightSource {
 public:
  HfCheckpoint(const std::string& dir, const OpenOptions& options) {
    config_ = read_config(dir);
    files_ = std::make_unique<safetensors::Checkpoint>(dir, options.use_mmap);
    specs_ = canonical_tensors(config_, config_.num_layers);
    for (const auto& s : specs_) bindings_.push_back(bind(dir, s));
    if (options.load_tokenizer)
      tokenizer_ = load_tokenizer_json(options.tokenizer_path.empty()
                                           ? (fs::path(dir) / "tokenizer.json").string()
                                           : options.tokenizer_path);
    log().info("opened {}: {} layers, {} tensors in {} file(s)", dir, config_.num_layers,
               files_->num_tensors(), files_->file_names().size());
  }

  const ModelConfig& config() const override { return config_; }
  const char* format() const override { return "safetensors"; }
  std::shared_ptr<const Tokenizer> tokenizer() const override { return tokenizer_; }

  std::vector<gptoss_tensor_desc> tensor_shapes(uint32_t num_layers) const override {
    std::vector<gptoss_tensor_desc> out;
    for_each_spec(specs_, num_layers, config_.num_layers,
                  [&](size_t i) { out.push_back(make_shape_desc(specs_[i], bindings_[i].dtype)); });
    return out;
  }

  void for_each_tensor(uint32_t num_layers,
                       const std::function<void(const gptoss_tensor_desc&)>& fn) const override {
    for_each_spec(specs_, num_layers, config_.num_layers, [&](size_t i) {
      const Binding& b = bindings_[i];
      gptoss_tensor_desc d = make_desc(specs_[i], b.dtype);
      d.data = b.data->data;
      d.data_size = b.data->size;
      if (b.scales) {
        d.scales = b.scales->data;
        d.scales_size = b.scales->size;
      }
      d.flags = GPTOSS_TENSOR_PERSISTENT;  // points into the files, which live as long as we do
      fn(d);
    });
  }

 private:
  static ModelConfig read_config(const std::string& dir) {
    const fs::path path = fs::path(dir) / "config.json";
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
      fail(gptoss_status_io, "{}: no config.json (not a Hugging Face checkpoint directory)", dir);
    std::ifstream in(path);
    auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) fail(gptoss_status_io, "{}: not valid JSON", path.string());
    try {
      return ModelConfig::from_hf_json(j);
    } catch (const Error& e) {
      throw Error(e.status(), fmt::format("{}: {}", path.string(), e.what()));
    }
  }

  const safetensors::TensorInfo& require(const std::string& dir, const std::string& name,
                                         const TensorSpec& s) const {
    const auto* t = files_->find(name);
    if (!t) {
      // A checkpoint whose experts were dequantized to bf16 has gate_up_proj instead.
      if (s.mxfp4 && files_->find(name.substr(0, name.size() - 7)))
        fail(gptoss_status_unsupported_argument,
             "{}: tensor {} is not MXFP4-quantized; only the original MXFP4 experts are "
             "supported", dir, name.substr(0, name.size() - 7));
      fail(gptoss_status_io, "{}: missing tensor {} (for {})", dir, name, s.name);
    }
    return *t;
  }

  static void require_shape(const std::string& dir, const safetensors::TensorInfo& t,
                            const std::vector<int64_t>& shape) {
    if (t.shape != shape)
      fail(gptoss_status_io, "{}: tensor {} has shape {}, the config implies {}", dir, t.name,
           shape_string(t.shape), shape_string(shape));
  }

  Binding bind(const std::string& dir, const TensorSpec& s) const {
    const std::string name = hf_tensor_name(s) + (s.mxfp4 ? "_blocks" : "");
    const auto& data = require(dir, name, s);
    if (!s.mxfp4) {
      gptoss_dtype dtype;
      if (data.dtype == "BF16") dtype = gptoss_dtype_bf16;
      else if (data.dtype == "F16") dtype = gptoss_dtype_f16;
      else if (data.dtype == "F32") dtype = gptoss_dtype_f32;
      else
        fail(gptoss_status_unsupported_argument,
             "{}: tensor {} has dtype {}; expected BF16, F16 or F32", dir, name, data.dtype);
      require_shape(dir, data, s.shape);
      return {&data, nullptr, dtype};
    }
    // [E, rows, cols] in blocks of 32 along cols: blocks U8 [E, rows, cols/32, 16] and
    // scales U8 [E, rows, cols/32].
    const std::string scales_name = hf_tensor_name(s) + "_scales";
    const auto& scales = require(dir, scales_name, s);
    for (const auto* t : {&data, &scales})
      if (t->dtype != "U8")
        fail(gptoss_status_unsupported_argument, "{}: tensor {} has dtype {}; expected U8", dir,
             t->name, t->dtype);
    const int64_t blocks = s.shape[2] / 32;
    require_shape(dir, data, {s.shape[0], s.shape[1], blocks, 16});
    require_shape(dir, scales, {s.shape[0], s.shape[1], blocks});
    return {&data, &scales, gptoss_dtype_mxfp4};
  }

  ModelConfig config_;
  std::unique_ptr<safetensors::Checkpoint> files_;
  std::vector<TensorSpec> specs_;
  std::vector<Binding> bindings_;
  std::shared_ptr<const Tokenizer> tokenizer_;
};

}  // namespace

std::unique_ptr<WeightSource> open_hf_checkpoint(const std::string& directory,
                                                 const OpenOptions& options) {
  return std::make_unique<HfCheckpoint>(directory, options);
}

}  // namespace gptoss
