#include "libgptoss/runtime/model.hpp"

#include <cmath>

#include "libgptoss/common/error.hpp"
#include "libgptoss/common/log.hpp"
#include "libgptoss/model/weights.hpp"

namespace gptoss {

BackendDevice::BackendDevice(std::shared_ptr<const Plugin> plugin, int32_t device,
                             uint32_t num_threads, gptoss_precision precision)
    : plugin_(std::move(plugin)) {
  const int32_t count = plugin_->api->device_count();
  if (device < 0 || device >= count)
    fail(gptoss_status_invalid_argument, "device {} out of range: backend '{}' has {} device(s)",
         device, plugin_->name, count);
  const gptoss_status st = plugin_->api->device_open(device, num_threads, &dev_);
  if (st != gptoss_status_success)
    fail(st, "backend '{}' could not open device {}", plugin_->name, device);
  if (GPTOSS_HAS_SLOT(plugin_->api, device_set_precision)) {
    const gptoss_status ps = plugin_->api->device_set_precision(dev_, precision);
    if (ps != gptoss_status_success) {
      plugin_->api->device_close(dev_);
      dev_ = nullptr;
      fail(ps, "backend '{}' refused precision {}", plugin_->name, int(precision));
    }
  }
}

BackendDevice::~BackendDevice() {
  if (dev_) plugin_->api->device_close(dev_);
}

void BackendDevice::check(gptoss_status st, const char* what) const {
  if (st == gptoss_status_success) return;
  const char* detail = plugin_->api->last_error(dev_);
  fail(st, "backend '{}': {} failed ({}){}{}", plugin_->name, what, status_name(st),
       detail && *detail ? ": " : "", detail ? detail : "");
}

std::shared_ptr<const Model> Model::load(const std::string& path, const LoadOptions& options) {
  OpenOptions open;
  open.use_mmap = options.use_mmap;
  open.tokenizer_path = options.tokenizer_path;
  std::shared_ptr<Model> m(new Model());
  m->source_ = open_checkpoint(path, open);
  const WeightSource* source = m->source_.get();
  m->config_ = source->config();
  m->format_ = source->format();
  m->tokenizer_ = source->tokenizer();
  if (options.num_layers > m->config_.num_layers)
    fail(gptoss_status_invalid_argument, "num_layers {} exceeds the model's {} layers",
         options.num_layers, m->config_.num_layers);
  m->num_layers_ = options.num_layers ? options.num_layers : m->config_.num_layers;
  if (m->tokenizer_ && m->tokenizer_->num_tokens() > m->config_.vocab_size)
    fail(gptoss_status_invalid_argument, "tokenizer has {} tokens but the model only {} rows",
         m->tokenizer_->num_tokens(), m->config_.vocab_size);

  auto plugin = BackendRegistry::instance().select(options.backend);
  m->device_ = std::make_shared<BackendDevice>(plugin, options.device, options.num_threads,
                                               options.precision);
  m->layers_.assign(m->num_layers_, {});

  const auto& api = m->device_->api();
  source->for_each_tensor(m->num_layers_, [&](const gptoss_tensor_desc& d) {
    uint64_t elems = 1;
    for (uint32_t i = 0; i < d.ndim; ++i) elems *= uint64_t(d.shape[i]);
    m->num_parameters_ += elems;
    {  // what a decode token reads of it: one embedding row, its share of the experts
      const double bytes = double(d.data_size) + double(d.scales_size);
      const bool expert = d.role == gptoss_tensor_mlp1 || d.role == gptoss_tensor_mlp1_bias ||
                          d.role == gptoss_tensor_mlp2 || d.role == gptoss_tensor_mlp2_bias;
      const double share = d.role == gptoss_tensor_embedding ? 1.0 / double(d.shape[0])
                           : expert ? double(m->config_.experts_per_token) / double(m->config_.num_experts)
                                    : 1.0;
      m->decode_weight_bytes_ += uint64_t(std::llround(bytes * share));
    }
    void* w = nullptr;
    m->device_->check(api.weight_upload(m->device_->dev(), &d, &w), d.name);
    void** slot = nullptr;
    switch (d.role) {
      case gptoss_tensor_embedding: slot = &m->embedding_; break;
      case gptoss_tensor_unembedding: slot = &m->unembedding_; break;
      case gptoss_tensor_final_norm: slot = &m->final_norm_; break;
      default:
        if (d.layer < 0 || uint32_t(d.layer) >= m->num_layers_ || d.role < gptoss_tensor_attn_norm ||
            d.role > gptoss_tensor_mlp2_bias) {
          api.weight_free(m->device_->dev(), w);
          fail(gptoss_status_internal, "unexpected tensor {}", d.name);
        }
        slot = &m->layers_[size_t(d.layer)][size_t(d.role) - size_t(gptoss_tensor_attn_norm)];
    }
    if (*slot != nullptr) {
      api.weight_free(m->device_->dev(), w);
      fail(gptoss_status_io, "tensor {} appears twice", d.name);
    }
    *slot = w;
  });
  auto missing = [&](const void* w, const std::string& what) {
    if (w == nullptr) fail(gptoss_status_io, "checkpoint has no tensor {}", what);
  };
  missing(m->embedding_, "embedding");
  missing(m->unembedding_, "unembedding");
  missing(m->final_norm_, "final_norm");
  for (uint32_t l = 0; l < m->num_layers_; ++l)
    for (size_t r = 0; r < kNumLayerRoles; ++r)
      missing(m->layers_[l][r], fmt::format("layers.{} role {}", l, r + size_t(gptoss_tensor_attn_norm)));
  log().info("loaded {} ({}, {} layers of {}) on backend '{}'", path, m->format_, m->num_layers_,
             m->config_.num_layers, m->device_->name());
  return m;
}

Model::~Model() {
  if (!device_) return;
  const auto& api = device_->api();
  auto release = [&](void* w) {
    if (w) api.weight_free(device_->dev(), w);
  };
  for (auto& layer : layers_)
    for (void* w : layer) release(w);
  release(embedding_);
  release(unembedding_);
  release(final_norm_);
}

}  // namespace gptoss
