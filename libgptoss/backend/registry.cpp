#include "libgptoss/backend/registry.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "libgptoss/common/error.hpp"
#include "libgptoss/common/log.hpp"

namespace gptoss {
namespace fs = std::filesystem;

// The host's table handed to every plugin.
static void host_log(gptoss_log_level level, const char* message) {
  switch (level) {
    case gptoss_log_level_trace: log().trace("{}", message); break;
    case gptoss_log_level_debug: log().debug("{}", message); break;
    case gptoss_log_level_info: log().info("{}", message); break;
    case gptoss_log_level_warning: log().warn("{}", message); break;
    default: log().error("{}", message); break;
  }
}
static const gptoss_host_api kHostApi = {
    /* .struct_size = */ sizeof(gptoss_host_api),
    /* .abi_major   = */ GPTOSS_BACKEND_ABI_MAJOR,
    /* .abi_minor   = */ GPTOSS_BACKEND_ABI_MINOR,
    /* .log         = */ host_log,
    /* .num_threads = */ 0,
};

// The slots a plugin must fill (include/gptoss/backend.h: every slot not marked OPTIONAL).
#define GPTOSS_REQUIRED_SLOTS(X)                                                                 \
  X(device_count) X(device_describe) X(device_open) X(device_close) X(last_error)                \
  X(stream_create) X(stream_destroy) X(stream_synchronize) X(buffer_alloc) X(buffer_free)        \
  X(buffer_view) X(buffer_write) X(buffer_read) X(buffer_copy) X(weight_upload) X(weight_free)  \
  X(kv_create) X(kv_grow) X(kv_destroy) X(embedding) X(rmsnorm) X(linear) X(rope) X(kv_write)   \
  X(attention) X(router) X(moe) X(add)

static bool has_required_slots(const gptoss_backend_api* a, std::string& missing) {
#define GPTOSS_REQUIRE_SLOT(f) \
  if (!GPTOSS_HAS_SLOT(a, f)) { missing = #f; return false; }
  GPTOSS_REQUIRED_SLOTS(GPTOSS_REQUIRE_SLOT)
#undef GPTOSS_REQUIRE_SLOT
  return true;
}

// Optional slots come in sets that only make sense whole.
static bool has_whole_sets(const gptoss_backend_api* a, std::string& why) {
  const int events = GPTOSS_HAS_SLOT(a, event_create) + GPTOSS_HAS_SLOT(a, event_destroy) +
                     GPTOSS_HAS_SLOT(a, event_record) + GPTOSS_HAS_SLOT(a, stream_wait_event);
  if (events != 0 && events != 4) {
    why = "event slots must be all four or none";
    return false;
  }
  if (GPTOSS_HAS_SLOT(a, step_begin) != GPTOSS_HAS_SLOT(a, step_end)) {
    why = "step_begin and step_end must come together";
    return false;
  }
  return true;
}

PluginProbe probe_plugin(const std::string& path) {
  PluginProbe probe;
  probe.path = path;
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    probe.reason = std::string("dlopen failed: ") + (e ? e : "unknown error");
    return probe;
  }
  auto refuse = [&](std::string why) {
    probe.reason = std::move(why);
    dlclose(h);
    return probe;
  };
  auto init = reinterpret_cast<gptoss_backend_init_fn>(dlsym(h, "gptoss_backend_init"));
  if (init == nullptr) return refuse("no gptoss_backend_init symbol");
  uint32_t score = 1;
  if (auto score_fn = reinterpret_cast<gptoss_backend_score_fn>(dlsym(h, "gptoss_backend_score")))
    score = score_fn();
  if (score == 0) {
    std::string why = "score() is 0: cannot run on this machine";
    if (auto reason_fn = reinterpret_cast<gptoss_backend_unavailable_reason_fn>(
            dlsym(h, "gptoss_backend_unavailable_reason")))
      if (const char* r = reason_fn(); r != nullptr && *r != '\0') why += std::string(" (") + r + ")";
    return refuse(why);
  }
  const gptoss_backend_api* api = nullptr;
  const gptoss_status st = init(&kHostApi, &api);
  if (st != gptoss_status_success || api == nullptr)
    return refuse(std::string("gptoss_backend_init failed: ") + status_name(st));
  if (api->struct_size < offsetof(gptoss_backend_api, name) + sizeof(const char*))
    return refuse("function table too small to hold its header");
  if (api->abi_major != GPTOSS_BACKEND_ABI_MAJOR)
    return refuse("ABI major version " + std::to_string(api->abi_major) + " (this libgptoss speaks " +
                  std::to_string(GPTOSS_BACKEND_ABI_MAJOR) + "; rebuild the plugin against its "
                  "include/gptoss/backend.h)");
  if (api->name == nullptr || api->name[0] == '\0') return refuse("no backend name");
  std::string missing;
  if (!has_required_slots(api, missing)) return refuse("required slot '" + missing + "' missing");
  if (!has_whole_sets(api, missing)) return refuse(missing);
  auto plugin = std::make_shared<Plugin>();
  plugin->path = path;
  plugin->name = api->name;
  plugin->score = score;
  plugin->api = api;
  plugin->handle = h;  // kept loaded: weights and streams may outlive any registry object
  probe.loaded = true;
  probe.plugin = std::move(plugin);
  return probe;
}

std::vector<std::string> default_plugin_dirs() {
  std::vector<std::string> dirs;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&default_plugin_dirs), &info) != 0 && info.dli_fname) {
    std::error_code ec;
    fs::path self = fs::canonical(info.dli_fname, ec);
    if (!ec) {
      const fs::path dir = self.parent_path();
      dirs.push_back((dir / "gptoss" / "backends").string());  // installed: ${libdir}/gptoss/backends
      dirs.push_back(dir.string());                            // build tree: build/lib
      dirs.push_back((dir.parent_path() / "lib").string());    // a program in build/bin
    }
  }
  return dirs;
}

static void collect(const fs::path& p, std::vector<std::string>& files) {
  std::error_code ec;
  if (fs::is_regular_file(p, ec)) {
    files.push_back(p.string());
    return;
  }
  if (!fs::is_directory(p, ec)) return;
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(p, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("libgptoss-backend-", 0) == 0 && entry.path().extension() == ".so")
      found.push_back(entry.path().string());
  }
  std::sort(found.begin(), found.end());
  files.insert(files.end(), found.begin(), found.end());
}

BackendRegistry& BackendRegistry::instance() {
  static BackendRegistry registry;
  return registry;
}

void BackendRegistry::scan_locked() {
  if (scanned_) return;
  scanned_ = true;
  std::vector<std::string> files;
  if (const char* env = std::getenv("GPTOSS_BACKEND_PATH"); env && *env) {
    std::string s = env;
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find(':', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) collect(s.substr(start, end - start), files);
      start = end + 1;
    }
  }
  for (const auto& d : default_plugin_dirs()) collect(d, files);
  std::vector<std::string> seen_names;
  for (const auto& f : files) {
    std::error_code ec;
    const std::string canon = fs::weakly_canonical(f, ec).string();
    if (std::any_of(probes_.begin(), probes_.end(), [&](const PluginProbe& p) {
          return fs::weakly_canonical(p.path, ec).string() == canon;
        }))
      continue;
    PluginProbe probe = probe_plugin(f);
    if (probe.loaded) {
      if (std::find(seen_names.begin(), seen_names.end(), probe.plugin->name) != seen_names.end()) {
        probe.loaded = false;
        probe.reason = "a backend named '" + probe.plugin->name + "' was already loaded";
        probe.plugin.reset();  // the handle stays open; harmless
      } else {
        seen_names.push_back(probe.plugin->name);
        log().info("backend '{}' loaded from {} (score {})", probe.plugin->name, f,
                   probe.plugin->score);
      }
    }
    if (!probe.loaded) log().warn("backend plugin {} skipped: {}", f, probe.reason);
    probes_.push_back(std::move(probe));
  }
}

std::vector<std::shared_ptr<const Plugin>> BackendRegistry::plugins() {
  std::lock_guard<std::mutex> lock(mutex_);
  scan_locked();
  std::vector<std::shared_ptr<const Plugin>> out;
  for (const auto& p : probes_)
    if (p.loaded) out.push_back(p.plugin);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->score > b->score; });
  return out;
}

std::vector<PluginProbe> BackendRegistry::probes() {
  std::lock_guard<std::mutex> lock(mutex_);
  scan_locked();
  return probes_;
}

std::shared_ptr<const Plugin> BackendRegistry::select(const std::string& name) {
  const auto all = plugins();
  std::string found;
  for (const auto& p : all) found += (found.empty() ? "" : ", ") + p->name;
  if (found.empty()) found = "none";
  for (const auto& p : all) {
    if (name == "auto" && p->explicit_only()) continue;  // test and debug backends
    if ((name == "auto" || name == p->name) && p->api->device_count() > 0) return p;
    if (name == p->name) fail(gptoss_status_unsupported_system, "backend '{}' has no device on this machine", name);
  }
  std::string skipped;
  for (const auto& p : probes())
    if (!p.loaded) skipped += fmt::format("; skipped {}: {}", p.path, p.reason);
  if (name != "auto" && name != "cpu" && name != "cuda" && name != "hip")
    fail(gptoss_status_invalid_argument, "unknown backend '{}' (loaded: {}{})", name, found, skipped);
  fail(gptoss_status_unsupported_system,
       "no usable backend '{}' (loaded: {}{}); set GPTOSS_BACKEND_PATH to the folder of "
       "libgptoss-backend-*.so",
       name, found, skipped);
}

}  // namespace gptoss
