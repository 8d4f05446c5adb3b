// The devices, buffers, random data and comparisons of backend-ops (backend_ops.hpp).
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>

#include "libgptoss/model/dtypes.hpp"
#include "tools/conformance/backend_ops.hpp"

namespace gptoss::conformance::ops {

namespace {
constexpr size_t kGuard = 256;           // bytes of sentinel on each side of an output
constexpr uint8_t kSentinel = 0xA5;      // 0xA5A5A5A5 is -2.9e-16 as f32: not a plausible output

// NMSE tolerances per op, in the exact and the fast precision. Exact: fp32 activations and
// accumulation; what differs is the order of sums and the exp/sqrt of each implementation
// (observed on the CPU's SIMD levels: 1e-15..1e-12). Fast: the backend may quantize
// activations (the CPU: int8 per 32-block against MXFP4 weights; bf16 attention products over
// a bf16 cache), as llama.cpp does; observed 1e-5..1e-4. 0: bit-exact (copies). sample: the
// largest absolute log-probability difference (its tokens must be equal).
struct Tolerance {
  const char* op;
  double exact, fast;
};
constexpr Tolerance kTolerances[] = {
    {"embedding", 0, 0},         {"rmsnorm", 1e-10, 1e-10},   {"linear", 1e-9, 1e-3},
    {"rope", 1e-10, 1e-10},      {"kv_write", 1e-9, 1e-4},    {"attention", 1e-9, 1e-4},
    {"router", 1e-8, 1e-8},      {"moe", 1e-9, 1e-3},         {"add", 0, 0},
    {"linear_qkv", 1e-9, 1e-3},  {"add_rmsnorm", 1e-10, 1e-10}, {"rope_kv_write", 1e-9, 1e-4},
    {"sample", 1e-5, 1e-5},      {"buffers", 0, 0},           {"kv_grow", 1e-9, 1e-4},
    {"buffer_copy_peer", 0, 0},
};
}  // namespace

std::string text(const char* format, ...) {
  char s[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(s, sizeof s, format, args);
  va_end(args);
  return s;
}

double tolerance(const std::string& op, gptoss_precision precision) {
  for (const Tolerance& t : kTolerances)
    if (op == t.op) return precision == gptoss_precision_exact ? t.exact : t.fast;
  throw std::runtime_error("no tolerance for op " + op);
}

Dev::Dev(std::shared_ptr<const Plugin> plugin, int32_t index, gptoss_precision precision)
    : plugin_(std::move(plugin)), index_(index) {
  check(api().device_open(index, 0, &dev_), "device_open");
  if (GPTOSS_HAS_SLOT(&api(), device_set_precision))
    check(api().device_set_precision(dev_, precision), "device_set_precision");
  check(api().stream_create(dev_, &stream_), "stream_create");
}

Dev::~Dev() {
  release();
  if (stream_) api().stream_destroy(dev_, stream_);
  if (dev_) api().device_close(dev_);
}

std::string Dev::label() const {
  char d[256];
  api().device_describe(index_, d, sizeof d);
  return plugin_->name + "[" + std::to_string(index_) + "] (" + d + ")";
}

void Dev::check(gptoss_status st, const std::string& what) const {
  if (st == gptoss_status_success) return;
  const char* why = api().last_error(dev_);
  throw std::runtime_error(plugin_->name + ": " + what + ": " + gptoss_status_to_string(st) +
                           (why && *why ? std::string(": ") + why : ""));
}

gptoss_backend_buffer_t Dev::alloc(size_t bytes) {
  gptoss_backend_buffer_t b = nullptr;
  check(api().buffer_alloc(dev_, std::max<size_t>(bytes, 1), &b), "buffer_alloc");
  buffers_.push_back(b);
  return b;
}

gptoss_backend_weight_t Dev::upload(const gptoss_tensor_desc& desc) {
  if (weights_.empty() && GPTOSS_HAS_SLOT(&api(), weights_begin))
    check(api().weights_begin(dev_, desc.data_size + desc.scales_size, 1), "weights_begin");
  gptoss_backend_weight_t w = nullptr;
  check(api().weight_upload(dev_, &desc, &w), std::string("weight_upload ") + desc.name);
  weights_.push_back(w);
  if (GPTOSS_HAS_SLOT(&api(), weights_end)) check(api().weights_end(dev_), "weights_end");
  return w;
}

gptoss_backend_kv_t Dev::kv(const gptoss_kv_desc& desc, size_t pages) {
  gptoss_backend_kv_t k = nullptr;
  check(api().kv_create(dev_, &desc, pages, &k), "kv_create");
  kvs_.push_back(k);
  return k;
}

void Dev::write(gptoss_backend_buffer_t b, const void* host, size_t bytes, size_t offset) const {
  check(api().buffer_write(stream_, b, offset, host, bytes), "buffer_write");
}

void Dev::read(gptoss_backend_buffer_t b, void* host, size_t bytes, size_t offset) const {
  check(api().buffer_read(stream_, b, offset, host, bytes), "buffer_read");
}

void Dev::release() {
  if (stream_) (void)api().stream_synchronize(stream_);
  for (auto b : buffers_) api().buffer_free(dev_, b);
  for (auto w : weights_) api().weight_free(dev_, w);
  for (auto k : kvs_) api().kv_destroy(dev_, k);
  buffers_.clear();
  weights_.clear();
  kvs_.clear();
}

Guarded guarded(Dev& d, size_t bytes) {
  Guarded g;
  g.bytes = bytes;
  const size_t total = kGuard + bytes + kGuard;
  g.base = d.alloc(total);
  const std::vector<uint8_t> fill(total, kSentinel);
  d.write(g.base, fill.data(), total);
  d.check(d.api().buffer_view(d.dev(), g.base, kGuard, bytes, &g.view), "buffer_view");
  return g;
}

std::vector<uint8_t> read_guarded(Dev& d, const Guarded& g, const std::string& what) {
  std::vector<uint8_t> all(kGuard + g.bytes + kGuard);
  d.read(g.base, all.data(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    const bool guard = i < kGuard || i >= kGuard + g.bytes;
    if (guard && all[i] != kSentinel)
      throw std::runtime_error(what + ": wrote outside its output (byte " +
                               std::to_string(long(i) - long(kGuard)) + " of " +
                               std::to_string(g.bytes) + ")");
  }
  return std::vector<uint8_t>(all.begin() + kGuard, all.begin() + long(kGuard + g.bytes));
}

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = dist(rng);
    if (x == 0.0f) x = 0.25f;
  }
  return v;
}

namespace {
std::shared_ptr<HostTensor> generate(gptoss_dtype dtype, const std::vector<int64_t>& shape,
                                     uint32_t seed, const std::string& name) {
  auto t = std::make_shared<HostTensor>();
  t->name = name;
  size_t elems = 1;
  for (int64_t s : shape) elems *= size_t(s);
  std::mt19937 rng(seed);
  const bool floats = dtype == gptoss_dtype_f32 || dtype == gptoss_dtype_bf16 || dtype == gptoss_dtype_f16;
  const std::vector<float> vals = floats ? random_floats(elems, seed ^ 0x5bd1e995u) : std::vector<float>();
  switch (dtype) {
    case gptoss_dtype_f32:
      t->data.resize(elems * 4);
      std::memcpy(t->data.data(), vals.data(), t->data.size());
      break;
    case gptoss_dtype_bf16:
    case gptoss_dtype_f16:
      t->data.resize(elems * 2);
      for (size_t i = 0; i < elems; ++i) {
        const uint16_t h = dtype == gptoss_dtype_bf16 ? f32_to_bf16(vals[i]) : f32_to_f16(vals[i]);
        std::memcpy(t->data.data() + 2 * i, &h, 2);
      }
      break;
    case gptoss_dtype_q8_0:  // blocks: f16 d in 2^-9..2^-3, every int8 value
      t->data.resize(elems / 32 * 34);
      for (size_t b = 0; b < elems / 32; ++b) {
        const uint16_t d = f32_to_f16(std::ldexp(1.0f + float(rng() % 1000) / 1000.0f, -9 + int(rng() % 7)));
        std::memcpy(t->data.data() + 34 * b, &d, 2);
        for (int j = 0; j < 32; ++j) t->data[34 * b + 2 + size_t(j)] = uint8_t(rng());
      }
      break;
    case gptoss_dtype_mxfp4:  // every code in both nibbles; scales 2^-8..2^-1 as in checkpoints
      t->data.resize(elems / 2);
      t->scales.resize(elems / 32);
      for (size_t i = 0; i < t->data.size(); i += 4) {  // four random bytes per draw
        const uint32_t r = rng();
        std::memcpy(t->data.data() + i, &r, std::min<size_t>(4, t->data.size() - i));
      }
      for (auto& s : t->scales) s = uint8_t(127 - 8 + int(rng() % 8));
      break;
  }
  gptoss_tensor_desc& d = t->desc;
  d.struct_size = sizeof d;
  d.name = t->name.c_str();
  d.layer = 0;
  d.dtype = dtype;
  d.ndim = uint32_t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) d.shape[i] = shape[i];
  d.data = t->data.data();
  d.data_size = t->data.size();
  d.scales = t->scales.empty() ? nullptr : t->scales.data();
  d.scales_size = t->scales.size();
  d.flags = GPTOSS_TENSOR_PERSISTENT;  // the test keeps it for the case's lifetime
  return t;
}
}  // namespace

std::shared_ptr<const HostTensor> random_tensor(gptoss_dtype dtype, std::vector<int64_t> shape,
                                                uint32_t seed, const std::string& name,
                                                gptoss_tensor_role role, int32_t first_expert) {
  // Tensors of a megabyte and more are kept for later cases with the same arguments.
  static std::map<std::string, std::shared_ptr<HostTensor>> cache;
  std::string key = std::to_string(int(dtype)) + "/" + std::to_string(seed) + "/" + name + "/" +
                    std::to_string(int(role));
  size_t elems = 1;
  for (int64_t s : shape) key += "/" + std::to_string(s), elems *= size_t(s);
  auto& slot = cache[key];
  std::shared_ptr<HostTensor> t = slot ? slot : generate(dtype, shape, seed, name);
  if (elems >= (size_t(1) << 20)) slot = t;
  else cache.erase(key);
  t->desc.role = role;
  t->desc.first_expert = first_expert;  // the fields cases set; shared tensors agree on them
  return t;
}

double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double err = 0, ref = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) != std::isnan(want[i])) return INFINITY;
    const double d = double(got[i]) - double(want[i]);
    err += d * d;
    ref += double(want[i]) * double(want[i]);
  }
  return ref > 0 ? err / ref : err;
}

double time_calls(Dev& d, int reps, const std::function<void()>& fn) {
  std::vector<double> t;
  fn();
  d.sync();
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    d.sync();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace gptoss::conformance::ops
