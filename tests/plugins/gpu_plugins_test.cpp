// The GPU backend plugins built here (cuda, hip) on a machine without their device: they
// load, score 0 with a reason naming what is missing, selecting them by name fails with that
// reason, and "auto" takes the CPU. On a machine with the device they score above 0.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>

#include "libgptoss/backend/registry.hpp"
#include "libgptoss/common/error.hpp"
#include "support/paths.hpp"

using namespace gptoss;

namespace {

struct GpuPlugin {
  const char* name;
  const char* vendor_word;  // in the no-device reason, any case ("libcuda", "CUDA"; "AMD")
};

bool mentions(std::string text, const std::string& word) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return text.find(word) != std::string::npos;
}

void check_gpu_plugin(const GpuPlugin& g) {
  const std::string path = test::binary_dir() + "/lib/libgptoss-backend-" + g.name + ".so";
  if (!std::filesystem::exists(path)) {
    WARN(std::string("the ") + g.name + " backend is not built here; nothing to check");
    return;
  }
  const PluginProbe probe = probe_plugin(path);
  if (probe.loaded) {  // a machine with the device
    CHECK(probe.plugin->name == g.name);
    CHECK(probe.plugin->score > 0);
    CHECK(probe.plugin->api->device_count() > 0);
    return;
  }
  INFO(probe.reason);
  CHECK(probe.reason.find("score() is 0: cannot run on this machine (") != std::string::npos);
  CHECK(mentions(probe.reason, g.vendor_word));

  auto& reg = BackendRegistry::instance();
  try {
    reg.select(g.name);
    FAIL("selecting a backend without a device must fail");
  } catch (const Error& e) {
    CHECK(e.status() == gptoss_status_unsupported_system);
    const std::string what = e.what();
    CHECK(what.find(std::string("no usable backend '") + g.name + "'") != std::string::npos);
    CHECK(mentions(what, g.vendor_word));  // the plugin's own reason
  }
}

}  // namespace

TEST_CASE("cuda plugin without a device: scores 0 with the reason, auto takes another", "[backend][gpu-plugins]") {
  check_gpu_plugin({"cuda", "cuda"});
}

TEST_CASE("hip plugin without a device: scores 0 with the reason, auto takes another", "[backend][gpu-plugins]") {
  check_gpu_plugin({"hip", "amd"});
}

TEST_CASE("auto selects the CPU when no GPU backend has a device", "[backend][gpu-plugins]") {
  auto& reg = BackendRegistry::instance();
  for (const auto& p : reg.plugins())
    if (p->name == "cuda" || p->name == "hip") return;  // a GPU machine: auto may pick it
  CHECK(reg.select("auto")->name == "cpu");
}
