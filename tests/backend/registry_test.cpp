// The plugin registry refuses broken plugins with a reason and loads the real CPU backend.
#include <catch2/catch.hpp>

#include <string>

#include "libgptoss/backend/registry.hpp"
#include "libgptoss/common/error.hpp"
#include "support/paths.hpp"

using namespace gptoss;

static std::string fake(const std::string& variant) {
  return test::binary_dir() + "/lib/libgptoss-fake-" + variant + ".so";
}

TEST_CASE("registry refuses each kind of broken plugin with a clear reason", "[backend][registry]") {
  struct Case {
    const char* variant;
    const char* reason;
  };
  const Case cases[] = {
      {"no_init", "no gptoss_backend_init symbol"},
      {"score_zero", "score() is 0"},
      {"abi_major_2", "ABI major version 2"},
      {"init_fails", "gptoss_backend_init failed: unsupported_system"},
      {"small_table", "required slot 'stream_create' missing"},
      {"null_slot", "required slot 'stream_create' missing"},
  };
  for (const auto& c : cases) {
    INFO(c.variant);
    const PluginProbe probe = probe_plugin(fake(c.variant));
    CHECK_FALSE(probe.loaded);
    CHECK(probe.reason.find(c.reason) != std::string::npos);
    CHECK(probe.plugin == nullptr);
  }
}

TEST_CASE("registry reports a file that is not a shared library", "[backend][registry]") {
  const PluginProbe probe = probe_plugin(test::source_dir() + "/CMakeLists.txt");
  CHECK_FALSE(probe.loaded);
  CHECK(probe.reason.find("dlopen failed") != std::string::npos);
  const PluginProbe missing = probe_plugin("/nonexistent/libgptoss-backend-x.so");
  CHECK_FALSE(missing.loaded);
}

TEST_CASE("registry loads the CPU backend and selects it by name and by auto", "[backend][registry]") {
  const PluginProbe probe = probe_plugin(test::binary_dir() + "/lib/libgptoss-backend-cpu.so");
  REQUIRE(probe.loaded);
  CHECK(probe.plugin->name == "cpu");
  CHECK(probe.plugin->score > 0);
  CHECK(probe.plugin->api->abi_major == GPTOSS_BACKEND_ABI_MAJOR);

  auto& reg = BackendRegistry::instance();
  CHECK(reg.select("cpu")->name == "cpu");
  CHECK(reg.select("auto") != nullptr);
  try {
    reg.select("no-such-backend");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.status() == gptoss_status_invalid_argument);
    CHECK(std::string(e.what()).find("no-such-backend") != std::string::npos);
  }
}
