#pragma once
// A device opened on a backend plugin, and the checked calls the core makes on it.
#include <cstdint>
#include <memory>
#include <string>

#include "gptoss/backend.h"
#include "libgptoss/backend/registry.hpp"

namespace gptoss {

class BackendDevice {
 public:
  // Opens device `index` of the plugin. Throws gptoss::Error naming the backend and device.
  BackendDevice(std::shared_ptr<const Plugin> plugin, int32_t index, uint32_t num_threads,
                gptoss_precision precision);
  ~BackendDevice();  // closes the device: everything allocated on it must be gone
  BackendDevice(const BackendDevice&) = delete;
  BackendDevice& operator=(const BackendDevice&) = delete;

  const gptoss_backend_api& api() const { return *plugin_->api; }
  gptoss_backend_device_t dev() const { return dev_; }
  int32_t index() const { return index_; }
  const std::string& name() const { return plugin_->name; }
  const Plugin& plugin() const { return *plugin_; }
  // What the backend declares for this device at its precision (device_properties; a backend
  // without the slot declares nothing): GPTOSS_DEVICE_* flags and its kernel variant ("" when
  // not named).
  uint32_t guarantees() const { return guarantees_; }
  const std::string& kernels() const { return kernels_; }

  // Throws gptoss::Error(st) naming `what`, the device and the backend's own message unless
  // st is success.
  void check(gptoss_status st, const char* what) const;

  gptoss_backend_buffer_t alloc(size_t bytes, const char* what) const;
  void free(gptoss_backend_buffer_t buf) const;
  gptoss_backend_buffer_t view(gptoss_backend_buffer_t buf, size_t offset, size_t bytes) const;
  gptoss_backend_stream_t create_stream() const;
  void destroy_stream(gptoss_backend_stream_t s) const;

 private:
  std::shared_ptr<const Plugin> plugin_;
  int32_t index_;
  gptoss_backend_device_t dev_ = nullptr;
  uint32_t guarantees_ = 0;
  std::string kernels_;
};

}  // namespace gptoss
