#include "libgptoss/runtime/model.hpp"

#include <cmath>

#include "libgptoss/common/error.hpp"
#include "libgptoss/common/log.hpp"
#include "libgptoss/model/weights.hpp"

namespace gptoss {

std::shared_ptr<const Model> Model::load(const std::string& path, const LoadOptions& options) {
  OpenOptions open;
  open.use_mmap = options.use_mmap;
  open.tokenizer_path = options.tokenizer_path;
  std::shared_ptr<Model> m(new Model());
  m->source_ = open_checkpoint(path, open);
  const WeightSource& source = *m->source_;
  m->config_ = source.config();
  m->format_ = source.format();
  m->tokenizer_ = source.tokenizer();
  if (options.num_layers > m->config_.num_layers)
    fail(gptoss_status_invalid_argument, "num_layers {} exceeds the model's {} layers",
         options.num_layers, m->config_.num_layers);
  m->num_layers_ = options.num_layers ? options.num_layers : m->config_.num_layers;
  if (m->tokenizer_ && m->tokenizer_->num_tokens() > m->config_.vocab_size)
    fail(gptoss_status_invalid_argument, "tokenizer has {} tokens but the model only {} rows",
         m->tokenizer_->num_tokens(), m->config_.vocab_size);
  m->open_devices(options);
  m->upload(source);
  m->check_complete();
  log().info("loaded {} ({}, {} layers of {}) on backend '{}', {} device(s)", path, m->format_,
             m->num_layers_, m->config_.num_layers, m->backend_name(), m->devices_.size());
  return m;
}

void Model::open_devices(const LoadOptions& options) {
  auto plugin = BackendRegistry::instance().select(options.backend);
  const int32_t available = plugin->api->device_count();
  const uint32_t usable = options.split == SplitMode::none ? 1u : uint32_t(std::max(1, available));
  placement_ = plan_placement(options.split, usable, num_layers_, config_.num_experts);
  for (uint32_t d = 0; d < placement_.n_devices; ++d) {
    const int32_t index = options.split == SplitMode::none ? options.device : int32_t(d);
    devices_.push_back(
        std::make_shared<BackendDevice>(plugin, index, options.num_threads, options.precision));
  }
  weights_.resize(devices_.size());
  for (auto& w : weights_) w.layers.assign(num_layers_, {});
  batch_invariant_ = true;
  for (const auto& dev : devices_) {
    batch_invariant_ = batch_invariant_ && (dev->guarantees() & GPTOSS_DEVICE_BATCH_INVARIANT) != 0;
    const std::string& k = dev->kernels();
    if (!k.empty() && ("," + kernels_ + ",").find("," + k + ",") == std::string::npos)
      kernels_ += (kernels_.empty() ? "" : ",") + k;
  }
}

template <typename Fn>
void Model::route(const gptoss_tensor_desc& desc, Fn&& fn) const {
  if (!placement_.experts_split() || !Placement::is_expert_role(desc.role)) {
    fn(placement_.device_of(desc.role, desc.layer), desc);
    return;
  }
  // A share of the experts: shape[0] experts, each a contiguous run of data (and scales).
  const size_t E = size_t(desc.shape[0]);
  for (uint32_t d = 0; d < placement_.n_devices; ++d) {
    const size_t e0 = placement_.expert_begin[d], e1 = placement_.expert_begin[d + 1];
    gptoss_tensor_desc part = desc;
    const std::string name = fmt::format("{}[experts {}..{}]", desc.name, e0, e1 - 1);
    part.name = name.c_str();
    part.shape[0] = int64_t(e1 - e0);
    part.first_expert = int32_t(e0);
    part.data_size = desc.data_size / E * (e1 - e0);
    part.scales_size = desc.scales_size / E * (e1 - e0);
    if (desc.data) part.data = static_cast<const uint8_t*>(desc.data) + desc.data_size / E * e0;
    if (desc.scales)
      part.scales = static_cast<const uint8_t*>(desc.scales) + desc.scales_size / E * e0;
    fn(d, part);
  }
}

gptoss_backend_weight_t* Model::slot_of(uint32_t d, const gptoss_tensor_desc& desc) {
  DeviceWeights& w = weights_[d];
  switch (desc.role) {
    case gptoss_tensor_embedding: return &w.embedding;
    case gptoss_tensor_unembedding: return &w.unembedding;
    case gptoss_tensor_final_norm: return &w.final_norm;
    default:
      if (desc.layer < 0 || uint32_t(desc.layer) >= num_layers_ ||
          desc.role < gptoss_tensor_attn_norm || desc.role > gptoss_tensor_mlp2_bias)
        fail(gptoss_status_internal, "unexpected tensor {}", desc.name);
      return &w.layers[size_t(desc.layer)][slot(desc.role)];
  }
}

void Model::upload(const WeightSource& source) {
  // Each device learns first what it is about to receive.
  std::vector<uint64_t> bytes(devices_.size(), 0);
  std::vector<size_t> count(devices_.size(), 0);
  for (const gptoss_tensor_desc& d : source.tensor_shapes(num_layers_))
    route(d, [&](uint32_t dev, const gptoss_tensor_desc& part) {
      bytes[dev] += part.data_size + part.scales_size;
      ++count[dev];
    });
  for (size_t d = 0; d < devices_.size(); ++d) {
    const BackendDevice& dev = *devices_[d];
    if (GPTOSS_HAS_SLOT(&dev.api(), weights_begin))
      dev.check(dev.api().weights_begin(dev.dev(), bytes[d], count[d]), "weights_begin");
  }
  source.for_each_tensor(num_layers_, [&](const gptoss_tensor_desc& d) {
    uint64_t elems = 1;
    for (uint32_t i = 0; i < d.ndim; ++i) elems *= uint64_t(d.shape[i]);
    num_parameters_ += elems;
    {  // what a decode token reads of it: one embedding row, its share of the experts
      const double b = double(d.data_size) + double(d.scales_size);
      const double share = d.role == gptoss_tensor_embedding ? 1.0 / double(d.shape[0])
                           : Placement::is_expert_role(d.role)
                               ? double(config_.experts_per_token) / double(config_.num_experts)
                               : 1.0;
      decode_weight_bytes_ += uint64_t(std::llround(b * share));
    }
    route(d, [&](uint32_t dev, const gptoss_tensor_desc& part) {
      gptoss_backend_weight_t* slot = slot_of(dev, part);
      if (*slot != nullptr) fail(gptoss_status_io, "tensor {} appears twice", part.name);
      const BackendDevice& bd = *devices_[dev];
      bd.check(bd.api().weight_upload(bd.dev(), &part, slot), part.name);
    });
  });
  for (const auto& dev : devices_)
    if (GPTOSS_HAS_SLOT(&dev->api(), weights_end))
      dev->check(dev->api().weights_end(dev->dev()), "weight upload (weights_end)");
}

void Model::check_complete() const {
  auto missing = [&](const void* w, const std::string& what) {
    if (w == nullptr) fail(gptoss_status_io, "checkpoint has no tensor {}", what);
  };
  missing(embedding(), "embedding");
  missing(unembedding(), "unembedding");
  missing(final_norm(), "final_norm");
  for (uint32_t l = 0; l < num_layers_; ++l)
    for (size_t r = 0; r < kNumLayerRoles; ++r) {
      const auto role = gptoss_tensor_role(r + size_t(gptoss_tensor_attn_norm));
      const std::string what = fmt::format("layers.{} role {}", l, int(role));
      if (placement_.experts_split() && Placement::is_expert_role(role)) {
        for (uint32_t d = 0; d < placement_.n_devices; ++d) missing(expert_weight(l, role, d), what);
      } else {
        missing(layer_weight(l, role), what);
      }
    }
}

Model::~Model() {
  for (size_t d = 0; d < weights_.size() && d < devices_.size(); ++d) {
    const BackendDevice& dev = *devices_[d];
    auto release = [&](gptoss_backend_weight_t w) {
      if (w) dev.api().weight_free(dev.dev(), w);
    };
    for (auto& layer : weights_[d].layers)
      for (auto w : layer) release(w);
    release(weights_[d].embedding);
    release(weights_[d].unembedding);
    release(weights_[d].final_norm);
  }
}

}  // namespace gptoss
