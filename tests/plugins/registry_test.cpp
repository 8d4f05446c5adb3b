// The plugin registry refuses broken plugins with a reason and loads the real CPU backend.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <cstdlib>
#include <set>
#include <string>

#include "libgptoss/backend/registry.hpp"
#include "libgptoss/common/error.hpp"
#include "support/cpu_levels.hpp"
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
      {"score_zero", "score() is 0: cannot run on this machine (no fake device here)"},
      {"abi_major_1", "ABI major version 1 (this libgptoss speaks 2; rebuild the plugin"},
      {"init_fails", "gptoss_backend_init failed: unsupported_system"},
      {"small_table", "required slot 'stream_create' missing"},
      {"null_slot", "required slot 'stream_create' missing"},
      {"half_events", "event slots must be all four or none"},
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

// The CPU plugin's buffers, through its table as the core sees them: writable, and from
// 2 MiB up 2 MiB-aligned (so that the kernel can back them with huge pages: a fault per 4 KiB
// page cost decode ~0.5 ms a token in the KV cache, which is allocated the same way). The ABI
// leaves a new buffer's contents undefined; the CPU's are fresh anonymous mappings, zeroed.
TEST_CASE("CPU backend buffers are zeroed; large ones are 2 MiB-aligned", "[backend][buffers]") {
  const PluginProbe probe = probe_plugin(test::binary_dir() + "/lib/libgptoss-backend-cpu.so");
  REQUIRE(probe.loaded);
  const gptoss_backend_api* api = probe.plugin->api;
  gptoss_backend_device_t dev = nullptr;
  REQUIRE(api->device_open(0, 1, &dev) == gptoss_status_success);
  for (size_t bytes : {size_t(1), size_t(5000), size_t(2) << 20, (size_t(5) << 20) + 12345}) {
    INFO("bytes " << bytes);
    for (int round = 0; round < 2; ++round) {
      gptoss_backend_buffer_t buf = nullptr;
      REQUIRE(api->buffer_alloc(dev, bytes, &buf) == gptoss_status_success);
      REQUIRE(buf != nullptr);
      auto* b = reinterpret_cast<unsigned char*>(buf);
      struct rusage before {}, after {};
      getrusage(RUSAGE_THREAD, &before);
      size_t nonzero = 0;
      for (size_t i = 0; i < bytes; ++i) nonzero += b[i] != 0;
      CHECK(nonzero == 0);
      if (bytes >= (size_t(2) << 20)) CHECK(reinterpret_cast<uintptr_t>(buf) % (size_t(2) << 20) == 0);
      for (size_t i = 0; i < bytes; ++i) b[i] = static_cast<unsigned char>(i * 7 + 1);
      getrusage(RUSAGE_THREAD, &after);
      // Under 2 MiB the pages come populated: reading and writing them takes no page fault.
      if (bytes < (size_t(2) << 20)) CHECK(after.ru_minflt == before.ru_minflt);
      CHECK(b[bytes - 1] == static_cast<unsigned char>((bytes - 1) * 7 + 1));
      api->buffer_free(dev, buf);
    }
  }
  api->device_close(dev);
}

// The CPU plugin lays a Q8_0 model's attention projections out for the fast precision's int16
// kernels at upload (Weight::q8_0_lanes) at the levels that have those kernels, so the precision
// is the one device_set_precision gave before the upload (as the ABI says): a device holding such
// a weight refuses exact afterwards rather than read the layout as rows. A device in exact
// precision, or at a level without the kernels, keeps the rows and may be told exact again.
// Every level is tried (GPTOSS_CPU_ISA, read when a device opens; a level the CPU lacks runs
// the best one below it, which the device reports): the machine's own level alone once missed
// that avx2 and avx512 repack too.
TEST_CASE("CPU backend: precision after a Q8_0 projection's upload", "[backend][precision]") {
  const PluginProbe probe = probe_plugin(test::binary_dir() + "/lib/libgptoss-backend-cpu.so");
  REQUIRE(probe.loaded);
  const gptoss_backend_api* api = probe.plugin->api;
  std::vector<uint8_t> rows(32 * 34 * 3, 0x11);  // 32 rows of 96 Q8_0 values
  gptoss_tensor_desc d{};
  d.struct_size = sizeof d;
  d.name = "layers.0.attn.q";
  d.role = gptoss_tensor_attn_q;
  d.dtype = gptoss_dtype_q8_0;
  d.ndim = 2;
  d.shape[0] = 32;
  d.shape[1] = 96;
  d.data = rows.data();
  d.data_size = rows.size();
  d.flags = GPTOSS_TENSOR_PERSISTENT;
  // The levels whose kernel tables have matmul_q8_0_lanes_q16 (kernels/<level>/table.cpp).
  const std::set<std::string> repacking = {"avx2", "avx512", "avx512vnni", "avx512bf16"};
  for (const std::string& isa : test::cpu_levels()) {
    test::ScopedCpuLevel scope(isa);
    for (gptoss_precision first : {gptoss_precision_fast, gptoss_precision_exact}) {
      INFO("GPTOSS_CPU_ISA=" << isa << ", " << (first == gptoss_precision_fast ? "fast" : "exact")
                             << " first");
      gptoss_backend_device_t dev = nullptr;
      REQUIRE(api->device_open(0, 1, &dev) == gptoss_status_success);
      REQUIRE(api->device_set_precision(dev, first) == gptoss_status_success);
      gptoss_backend_weight_t w = nullptr;
      REQUIRE(api->weight_upload(dev, &d, &w) == gptoss_status_success);
      gptoss_backend_device_properties p{};
      p.struct_size = sizeof p;
      REQUIRE(api->device_properties(dev, &p) == gptoss_status_success);
      const std::string level = p.kernels != nullptr ? p.kernels : "";
      const bool repacked = first == gptoss_precision_fast && repacking.count(level) == 1;
      INFO("level " << level);
      const gptoss_status st = api->device_set_precision(dev, gptoss_precision_exact);
      CHECK(st == (repacked ? gptoss_status_invalid_argument : gptoss_status_success));
      if (repacked)
        CHECK(std::string(api->last_error(dev)).find("before weight_upload") != std::string::npos);
      CHECK(api->device_set_precision(dev, first) == gptoss_status_success);
      api->weight_free(dev, w);
      api->device_close(dev);
    }
  }
}
