#pragma once
// gptoss-conformance backend-ops: every slot of a backend, called through its plugin table,
// against the scalar CPU reference (the CPU plugin on a device opened with
// GPTOSS_CPU_ISA=scalar), on random inputs (never zeros) at tail shapes and at the real
// gpt-oss shapes. Outputs live in the middle of larger buffers whose edges hold a sentinel
// pattern, so an op writing outside its output shows. Each op's tolerance (normalised mean
// squared error against the reference) is stated once, in kTolerances.
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gptoss/backend.h"
#include "libgptoss/backend/registry.hpp"

namespace gptoss::conformance::ops {

// One device opened on a plugin, with a stream; checked calls throw std::runtime_error.
class Dev {
 public:
  Dev(std::shared_ptr<const Plugin> plugin, int32_t index, gptoss_precision precision);
  ~Dev();
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;

  const gptoss_backend_api& api() const { return *plugin_->api; }
  gptoss_backend_device_t dev() const { return dev_; }
  gptoss_backend_stream_t stream() const { return stream_; }
  std::string label() const;
  void check(gptoss_status st, const std::string& what) const;

  // Device memory freed with this Dev.
  gptoss_backend_buffer_t alloc(size_t bytes);
  gptoss_backend_weight_t upload(const gptoss_tensor_desc& desc);
  gptoss_backend_kv_t kv(const gptoss_kv_desc& desc, size_t pages);
  void write(gptoss_backend_buffer_t b, const void* host, size_t bytes, size_t offset = 0) const;
  void read(gptoss_backend_buffer_t b, void* host, size_t bytes, size_t offset = 0) const;
  void sync() const { check(api().stream_synchronize(stream_), "stream_synchronize"); }
  // Frees everything allocated since the last release (between cases).
  void release();

 private:
  std::shared_ptr<const Plugin> plugin_;
  int32_t index_;
  gptoss_backend_device_t dev_ = nullptr;
  gptoss_backend_stream_t stream_ = nullptr;
  std::vector<gptoss_backend_buffer_t> buffers_;
  std::vector<gptoss_backend_weight_t> weights_;
  std::vector<gptoss_backend_kv_t> kvs_;
};

// An output buffer with sentinel guards on both sides: `view` is the op's output.
struct Guarded {
  gptoss_backend_buffer_t base = nullptr, view = nullptr;
  size_t bytes = 0;
};
Guarded guarded(Dev& d, size_t bytes);
// The output's contents; throws naming `what` if a guard byte changed.
std::vector<uint8_t> read_guarded(Dev& d, const Guarded& g, const std::string& what);

// A host tensor the test keeps alive while the devices may point into it.
struct HostTensor {
  gptoss_tensor_desc desc{};
  std::vector<uint8_t> data, scales;
  std::string name;
};
// Random weights of `dtype` (never all zero), shape {rows, cols} or {experts, rows, cols}, with
// the role a model's tensor of that kind has (backends lay out and check weights by role).
// The same arguments give the same tensor; large ones are generated once per process and
// shared (a real MoE layer is 400 MB), so the result is const.
std::shared_ptr<const HostTensor> random_tensor(gptoss_dtype dtype, std::vector<int64_t> shape,
                                                uint32_t seed, const std::string& name,
                                                gptoss_tensor_role role, int32_t first_expert = 0);
std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);

double nmse(const std::vector<float>& got, const std::vector<float>& want);
double tolerance(const std::string& op, gptoss_precision precision);

// What a case reports.
struct Result {
  bool ok = true;
  bool skipped = false;  // nothing to test here (say why in note)
  double error = 0;  // NMSE, or mismatches for exact comparisons
  double tol = 0;
  std::string note;  // why it failed, beyond the error
  double us = 0;     // --perf: median time per call on the device under test
};

// The pair a case runs on: the reference device and the device under test (and a second
// device of the backend under test when it has one, for peer copies).
struct Pair {
  Dev& ref;
  Dev& test;
  Dev* test2;
  gptoss_precision precision;
  int perf_reps;  // 0: no timing
};

// Which shapes a case runs at (--shapes): tails (odd sizes around the SIMD widths, the
// default with real), the real gpt-oss-20b/120b shapes of a layer, and big (whole-vocabulary
// matrices: a gigabyte of weights, not for CI).
enum class Shapes { tails, real, big };

struct Case {
  std::string op;     // the slot (filter -o)
  std::string shape;  // for the report
  Shapes shapes;
  std::function<Result(Pair&)> run;
};

// printf into a string (case descriptions).
std::string text(const char* format, ...) __attribute__((format(printf, 1, 2)));

std::vector<Case> all_cases();
void dense_cases(std::vector<Case>& c);
void attention_cases(std::vector<Case>& c);
void moe_cases(std::vector<Case>& c);
void misc_cases(std::vector<Case>& c);

// Times fn (which enqueues one call) on `d`: median of `reps` synchronised calls, microseconds.
double time_calls(Dev& d, int reps, const std::function<void()>& fn);

}  // namespace gptoss::conformance::ops
