// GPTOSS_CPU_PROFILE's report: time per op kind and, for the weight-streaming ops, the weight
// bytes they read per second; and the byte counts those ops are charged.
#include <dlfcn.h>
#include <cmath>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/test_weights.hpp"
#include "gptoss/backend.h"
#include "op_profile.hpp"
#include "support/paths.hpp"
#include "tests/model/model_test_util.hpp"

using namespace gptoss::cpu;
using gptoss::cpu::test::random_floats;
using gptoss::cpu::test::random_weight;

TEST_CASE("op profile: time shares and weight bandwidth per op kind", "[cpu-ops]") {
  ::setenv("GPTOSS_CPU_PROFILE", "1", 1);
  OpProfile p;
  ::unsetenv("GPTOSS_CPU_PROFILE");
  REQUIRE(p.enabled());
  CHECK(p.report().empty());
  using std::chrono::milliseconds;
  p.add(OpKind::linear, milliseconds(2));
  p.add(OpKind::linear, milliseconds(2));
  p.add_bytes(OpKind::linear, 100'000'000);
  p.add_bytes(OpKind::linear, 100'000'000);
  p.add(OpKind::rmsnorm, milliseconds(1));
  // 200 MB in 4 ms: 50 GB/s; rmsnorm reads no weights worth counting and shows no rate.
  CHECK(p.report() == "linear 4.0 ms / 2 calls (80.0%, 50.0 GB/s), rmsnorm 1.0 ms / 1 calls (20.0%)");

  ::setenv("GPTOSS_CPU_PROFILE", "0", 1);
  CHECK_FALSE(OpProfile().enabled());
  ::unsetenv("GPTOSS_CPU_PROFILE");
  CHECK_FALSE(OpProfile().enabled());
}

TEST_CASE("op profile: bytes of dense rows and of the routed experts", "[cpu-ops]") {
  const Weight dense = random_weight(gptoss_dtype_bf16, 7, 64, 1);
  CHECK(weight_rows_bytes(dense, 7) == 7 * 64 * 2);
  const Weight q = random_weight(gptoss_dtype_mxfp4, 5, 64, 2);
  CHECK(weight_rows_bytes(q, 5) == 5 * (32 + 2));  // codes and one scale per 32

  // 4 experts: mlp1 [4, 6, 64], mlp2 [4, 3, 96] in MXFP4.
  const Weight mlp1 = random_weight(gptoss_dtype_mxfp4, 24, 64, 3, 4);
  const Weight mlp2 = random_weight(gptoss_dtype_mxfp4, 12, 96, 4, 4);
  const uint64_t expert = 6 * (32 + 2) + 3 * (48 + 3);
  const std::vector<int32_t> ids = {2, 0, 2, 2, 0, 3};  // 3 tokens x top 2: experts 0, 2, 3
  CHECK(routed_expert_bytes(ids.data(), ids.size(), mlp1, mlp2) == 3 * expert);
  CHECK(routed_expert_bytes(ids.data(), 2, mlp1, mlp2) == 2 * expert);
  const std::vector<int32_t> bad = {1, -1, 4, 1};  // out of range: counted as nothing
  CHECK(routed_expert_bytes(bad.data(), bad.size(), mlp1, mlp2) == expert);
  CHECK(routed_expert_bytes(nullptr, 0, mlp1, mlp2) == 0);
}

namespace {
std::vector<std::string> g_log;  // what the plugin logged through the host
void capture_log(gptoss_log_level, const char* message) { g_log.emplace_back(message); }

// The figure "<op> <ms> ms / <n> calls (<share>%, <rate> GB/s" of a profile report, as
// milliseconds and GB/s (both 0 when the op has no entry with a rate).
std::pair<double, double> entry(const std::string& report, const std::string& op) {
  const size_t at = report.find(op + " ");
  if (at == std::string::npos) return {0, 0};
  double ms = 0, share = 0, rate = 0;
  unsigned long long calls = 0;
  if (std::sscanf(report.c_str() + at + op.size(), " %lf ms / %llu calls (%lf%%, %lf GB/s", &ms,
                  &calls, &share, &rate) != 4)
    return {0, 0};
  return {ms, rate};
}
}  // namespace

// Through the real plugin: the profile charges linear and moe calls the bytes of the weights
// they read (wrong argument positions in the per-op byte counters would miss by far more
// than the report's rounding).
TEST_CASE("op profile: the plugin reports each op's weight bytes per second", "[cpu-ops]") {
  // A private copy of the plugin: dlopen gives it its own globals (the host table it logs
  // through), apart from the instance the library's registry may have loaded in this process.
  gptoss::test::TempDir dir;
  const std::string path = dir / "libgptoss-backend-cpu-copy.so";
  std::filesystem::copy_file(gptoss::test::binary_dir() + "/lib/libgptoss-backend-cpu.so", path);
  void* so = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(so != nullptr);
  auto init = reinterpret_cast<gptoss_backend_init_fn>(::dlsym(so, "gptoss_backend_init"));
  REQUIRE(init != nullptr);
  static gptoss_host_api host{};  // the plugin keeps a pointer to it
  host.struct_size = sizeof host;
  host.abi_major = GPTOSS_BACKEND_ABI_MAJOR;
  host.abi_minor = GPTOSS_BACKEND_ABI_MINOR;
  host.log = capture_log;
  host.num_threads = 2;
  const gptoss_backend_api* api = nullptr;
  REQUIRE(init(&host, &api) == gptoss_status_success);

  ::setenv("GPTOSS_CPU_PROFILE", "1", 1);
  gptoss_backend_device_t dev = nullptr;
  REQUIRE(api->device_open(0, 2, &dev) == gptoss_status_success);
  ::unsetenv("GPTOSS_CPU_PROFILE");
  gptoss_backend_stream_t stream = nullptr;
  REQUIRE(api->stream_create(dev, &stream) == gptoss_status_success);

  // Weights big enough that the calls take milliseconds: a [4096, 2880] bf16 matrix, and
  // 4 experts of mlp1 [4, 1024, 2880] and mlp2 [4, 2880, 512] in MXFP4.
  const size_t H = 2880, R = 4096, E = 4, I = 512;
  const Weight dense = random_weight(gptoss_dtype_bf16, R, H, 11);
  const Weight mlp1 = random_weight(gptoss_dtype_mxfp4, E * 2 * I, H, 12, E);
  const Weight mlp2 = random_weight(gptoss_dtype_mxfp4, E * H, I, 13, E);
  auto upload = [&](const Weight& w, const char* name) {
    gptoss_tensor_desc d{};
    d.struct_size = sizeof d;
    d.name = name;
    d.layer = 0;
    d.dtype = w.dtype;
    d.ndim = w.ndim;
    for (uint32_t i = 0; i < w.ndim; ++i) d.shape[i] = w.shape[i];
    d.data = w.data;
    d.data_size = w.rows * w.row_bytes;
    d.scales = w.scales;
    d.scales_size = w.dtype == gptoss_dtype_mxfp4 ? w.rows * w.cols / 32 : 0;
    d.flags = GPTOSS_TENSOR_PERSISTENT;
    gptoss_backend_weight_t out = nullptr;
    REQUIRE(api->weight_upload(dev, &d, &out) == gptoss_status_success);
    return out;
  };
  gptoss_backend_weight_t wd = upload(dense, "dense");
  gptoss_backend_weight_t w1 = upload(mlp1, "mlp1");
  gptoss_backend_weight_t w2 = upload(mlp2, "mlp2");

  auto buffer = [&](const std::vector<float>& host_data) {
    gptoss_backend_buffer_t b = nullptr;
    REQUIRE(api->buffer_alloc(dev, host_data.size() * 4, &b) == gptoss_status_success);
    REQUIRE(api->buffer_write(stream, b, 0, host_data.data(), host_data.size() * 4) == gptoss_status_success);
    return b;
  };
  gptoss_backend_buffer_t x = buffer(random_floats(2 * H, 14));
  gptoss_backend_buffer_t y = buffer(std::vector<float>(2 * R, 0.0f));
  const std::vector<int32_t> ids = {3, 1, 1, 3};  // 2 tokens, top 2: experts 1 and 3
  gptoss_backend_buffer_t ids_buf = nullptr;
  REQUIRE(api->buffer_alloc(dev, 16, &ids_buf) == gptoss_status_success);
  REQUIRE(api->buffer_write(stream, ids_buf, 0, ids.data(), 16) == gptoss_status_success);
  gptoss_backend_buffer_t gates = buffer({0.6f, 0.4f, 0.5f, 0.5f});
  const int calls = 40;
  for (int i = 0; i < calls; ++i) {
    REQUIRE(api->linear(stream, x, wd, nullptr, 1, H, R, y) == gptoss_status_success);
    REQUIRE(api->moe(stream, x, ids_buf, gates, w1, nullptr, w2, nullptr, 2, H, I, 2, 7.0f, y) ==
            gptoss_status_success);
  }
  REQUIRE(api->stream_synchronize(stream) == gptoss_status_success);
  for (gptoss_backend_buffer_t b : {x, y, ids_buf, gates}) api->buffer_free(dev, b);
  for (gptoss_backend_weight_t w : {wd, w1, w2}) api->weight_free(dev, w);
  api->stream_destroy(dev, stream);
  g_log.clear();
  api->device_close(dev);  // logs the report

  std::string report;
  for (const std::string& m : g_log)
    if (m.rfind("cpu profile: ", 0) == 0) report = m;
  INFO(report);
  REQUIRE(!report.empty());
  const double linear_bytes = double(calls) * R * H * 2;
  const double moe_bytes = double(calls) * 2 * (2 * I * (H / 2 + H / 32) + H * (I / 2 + I / 32));
  const std::pair<std::string, double> expected[] = {{"linear", linear_bytes}, {"moe", moe_bytes}};
  for (const auto& [op, bytes] : expected) {
    const auto [ms, rate] = entry(report, op);
    INFO(op);
    REQUIRE(ms >= 1.0);  // long enough for the report's rounding to matter little
    // The report rounds ms and GB/s to 0.1: the rate its bytes and time give is the printed
    // rate within that rounding (0.05 GB/s, and the time's 0.05 ms), however slow the op ran
    // (under ASan the moe op reads at ~0.5 GB/s, where 0.05 is 10 %).
    const double implied = bytes / (ms * 1e6);
    INFO("bytes over the printed time: " << implied << " GB/s");
    CHECK(std::abs(implied - rate) <= 0.05 + implied * 0.05 / (ms - 0.05) + 1e-9);
  }
  ::dlclose(so);
}
