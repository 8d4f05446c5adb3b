#include "libgptoss/runtime/device.hpp"

#include "libgptoss/common/error.hpp"

namespace gptoss {

BackendDevice::BackendDevice(std::shared_ptr<const Plugin> plugin, int32_t index,
                             uint32_t num_threads, gptoss_precision precision)
    : plugin_(std::move(plugin)), index_(index) {
  const gptoss_backend_api& a = *plugin_->api;
  const int32_t count = a.device_count();
  if (index < 0 || index >= count)
    fail(gptoss_status_invalid_argument, "device {} out of range: backend '{}' has {} device(s)",
         index, plugin_->name, count);
  const gptoss_status st = a.device_open(index, num_threads, &dev_);
  if (st != gptoss_status_success) {
    const char* why = a.last_error(nullptr);
    fail(st, "backend '{}' could not open device {}{}{}", plugin_->name, index,
         why && *why ? ": " : "", why ? why : "");
  }
  if (GPTOSS_HAS_SLOT(&a, device_set_precision)) {
    const gptoss_status ps = a.device_set_precision(dev_, precision);
    if (ps != gptoss_status_success) {
      a.device_close(dev_);
      dev_ = nullptr;
      fail(ps, "backend '{}' refused precision {}", plugin_->name, int(precision));
    }
  }
  if (GPTOSS_HAS_SLOT(&a, device_properties)) {
    gptoss_backend_device_properties p{};
    p.struct_size = sizeof p;
    // A failure here only withholds the guarantees: the device works without them.
    if (a.device_properties(dev_, &p) == gptoss_status_success) {
      guarantees_ = p.flags;
      kernels_ = p.kernels != nullptr ? p.kernels : "";
    }
  }
}

BackendDevice::~BackendDevice() {
  if (dev_) plugin_->api->device_close(dev_);
}

void BackendDevice::check(gptoss_status st, const char* what) const {
  if (st == gptoss_status_success) return;
  const char* d = api().last_error(dev_);
  const std::string detail = d ? d : "";
  std::string memory;  // what is left, when memory ran out and the backend can say
  size_t free_bytes = 0, total = 0;
  if (st == gptoss_status_insufficient_memory && GPTOSS_HAS_SLOT(&api(), device_memory_info) &&
      api().device_memory_info(dev_, &free_bytes, &total) == gptoss_status_success)
    memory = fmt::format(" (device memory: {} MiB free of {} MiB)", free_bytes >> 20, total >> 20);
  fail(st, "backend '{}' device {}: {} failed ({}){}{}{}", plugin_->name, index_, what,
       status_name(st), detail.empty() ? "" : ": ", detail, memory);
}

gptoss_backend_buffer_t BackendDevice::alloc(size_t bytes, const char* what) const {
  gptoss_backend_buffer_t b = nullptr;
  check(api().buffer_alloc(dev_, bytes, &b), what);
  return b;
}

void BackendDevice::free(gptoss_backend_buffer_t buf) const {
  if (buf) api().buffer_free(dev_, buf);
}

gptoss_backend_buffer_t BackendDevice::view(gptoss_backend_buffer_t buf, size_t offset,
                                            size_t bytes) const {
  gptoss_backend_buffer_t v = nullptr;
  check(api().buffer_view(dev_, buf, offset, bytes, &v), "buffer view");
  return v;
}

gptoss_backend_stream_t BackendDevice::create_stream() const {
  gptoss_backend_stream_t s = nullptr;
  check(api().stream_create(dev_, &s), "stream creation");
  return s;
}

void BackendDevice::destroy_stream(gptoss_backend_stream_t s) const {
  if (s) api().stream_destroy(dev_, s);
}

}  // namespace gptoss
