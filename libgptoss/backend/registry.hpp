#pragma once
// Discovery and loading of backend plugins (shared libraries named libgptoss-backend-*.so).
// Searched in GPTOSS_BACKEND_PATH (':'-separated folders or files), then beside the object
// that holds libgptoss (found with dladdr, so it works under Python too) and in ../lib of it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gptoss/backend.h"

namespace gptoss {

// True when `api` declares slot `offset` (of size `size`) within its struct_size.
inline bool has_slot(const gptoss_backend_api* api, size_t offset, size_t size) {
  return api->struct_size >= offset + size;
}
#define GPTOSS_HAS_SLOT(api, field)                                            \
  (::gptoss::has_slot((api), offsetof(gptoss_backend_api, field),              \
                      sizeof(static_cast<gptoss_backend_api*>(nullptr)->field)) && \
   (api)->field != nullptr)

struct Plugin {
  std::string path;
  std::string name;  // api->name
  uint32_t score = 0;
  const gptoss_backend_api* api = nullptr;
  void* handle = nullptr;  // dlopen handle; plugins stay loaded for the process
  bool explicit_only() const {
    return has_slot(api, offsetof(gptoss_backend_api, flags), sizeof(api->flags)) &&
           (api->flags & GPTOSS_BACKEND_EXPLICIT_ONLY) != 0;
  }
};

struct PluginProbe {
  std::string path;
  bool loaded = false;
  std::string reason;  // why it was skipped
  std::shared_ptr<const Plugin> plugin;
};

// Loads one plugin file and checks it; never throws. The reason says why it was refused.
PluginProbe probe_plugin(const std::string& path);

class BackendRegistry {
 public:
  static BackendRegistry& instance();
  // Loaded, usable plugins (score > 0), best first. Scans on first use.
  std::vector<std::shared_ptr<const Plugin>> plugins();
  // Every file looked at, with the reason it was skipped (for messages and tests).
  std::vector<PluginProbe> probes();
  // "auto" = the best-scoring plugin with at least one device that is not explicit-only
  // (GPTOSS_BACKEND_EXPLICIT_ONLY); otherwise by name.
  // Throws gptoss::Error(unsupported_system | invalid_argument) listing what was found.
  std::shared_ptr<const Plugin> select(const std::string& name);

 private:
  void scan_locked();
  std::mutex mutex_;
  bool scanned_ = false;
  std::vector<PluginProbe> probes_;
};

// Folders searched by default (without GPTOSS_BACKEND_PATH).
std::vector<std::string> default_plugin_dirs();

}  // namespace gptoss
