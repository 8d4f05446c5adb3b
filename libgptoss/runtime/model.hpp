#pragma once
// A loaded model: config, tokenizer, and every weight uploaded once to one backend device.
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "gptoss/backend.h"
#include "libgptoss/backend/registry.hpp"
#include "libgptoss/model/config.hpp"
#include "libgptoss/tokenizer/tokenizer.hpp"

namespace gptoss {

class WeightSource;

struct LoadOptions {
  std::string backend = "auto";
  int32_t device = 0;
  uint32_t num_threads = 0;
  uint32_t num_layers = 0;  // 0 = all
  bool use_mmap = true;
  std::string tokenizer_path;
  gptoss_precision precision = gptoss_precision_fast;
};

// A device opened on a backend; closes it last, after everything allocated on it is gone.
class BackendDevice {
 public:
  BackendDevice(std::shared_ptr<const Plugin> plugin, int32_t device, uint32_t num_threads,
                gptoss_precision precision = gptoss_precision_fast);
  ~BackendDevice();
  BackendDevice(const BackendDevice&) = delete;
  BackendDevice& operator=(const BackendDevice&) = delete;

  const gptoss_backend_api& api() const { return *plugin_->api; }
  void* dev() const { return dev_; }
  const std::string& name() const { return plugin_->name; }
  // Throws gptoss::Error(st) naming `what` and the backend's own message unless st is success.
  void check(gptoss_status st, const char* what) const;

 private:
  std::shared_ptr<const Plugin> plugin_;
  void* dev_ = nullptr;
};

class Model {
 public:
  static constexpr size_t kNumLayerRoles = 17;  // attn_norm .. mlp2_bias

  static std::shared_ptr<const Model> load(const std::string& path, const LoadOptions& options);
  ~Model();

  const ModelConfig& config() const { return config_; }
  uint32_t num_layers() const { return num_layers_; }  // in use
  const std::shared_ptr<const Tokenizer>& tokenizer() const { return tokenizer_; }
  const std::string& format() const { return format_; }
  uint64_t num_parameters() const { return num_parameters_; }
  // Bytes of weights one decode token reads (see gptoss_model_info::decode_weight_bytes).
  uint64_t decode_weight_bytes() const { return decode_weight_bytes_; }
  const BackendDevice& device() const { return *device_; }

  // Backend weight handle of a layer tensor (role in gptoss_tensor_attn_norm..mlp2_bias).
  const void* layer_weight(uint32_t layer, gptoss_tensor_role role) const {
    return layers_[layer][size_t(role) - size_t(gptoss_tensor_attn_norm)];
  }
  const void* embedding() const { return embedding_; }
  const void* unembedding() const { return unembedding_; }
  const void* final_norm() const { return final_norm_; }

 private:
  Model() = default;
  ModelConfig config_;
  uint32_t num_layers_ = 0;
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::string format_;
  uint64_t num_parameters_ = 0;
  uint64_t decode_weight_bytes_ = 0;
  // Keeps the checkpoint mapped: backends may point into it (GPTOSS_TENSOR_PERSISTENT).
  std::shared_ptr<const WeightSource> source_;
  std::shared_ptr<BackendDevice> device_;
  std::vector<std::array<void*, kNumLayerRoles>> layers_;
  void* embedding_ = nullptr;
  void* unembedding_ = nullptr;
  void* final_norm_ = nullptr;
};

}  // namespace gptoss
