#pragma once
// The C handles: each wraps the core object it names, with an atomic reference count.
#include <algorithm>
#include <cstring>
#include <memory>

#include "libgptoss/api/api_util.hpp"
#include "libgptoss/api/handles_constrain.hpp"
#include "libgptoss/api/handles_tokenizer.hpp"
#include "libgptoss/runtime/context.hpp"
#include "libgptoss/runtime/kvcache.hpp"
#include "libgptoss/runtime/model.hpp"
#include "libgptoss/sampling/sampler.hpp"

struct gptoss_model : gptoss::api::RefCounted {
  std::shared_ptr<const gptoss::Model> model;
};

struct gptoss_kvcache : gptoss::api::RefCounted {
  std::shared_ptr<gptoss::KvPool> pool;
};

struct gptoss_context : gptoss::api::RefCounted {
  std::unique_ptr<gptoss::Context> ctx;
};

struct gptoss_sampler : gptoss::api::RefCounted {
  explicit gptoss_sampler(const gptoss::SamplerParams& p) : sampler(p) {}
  ~gptoss_sampler() override { gptoss::api::release(constraint); }
  gptoss::Sampler sampler;
  gptoss_constraint* constraint = nullptr;  // retained; gptoss_sampler_set_constraint
};

namespace gptoss::api {

// Checks the struct_size of an options struct: not NULL, not smaller than its first version.
template <typename T>
void check_struct_size(const T* options, size_t min_size, const char* what) {
  require(options, what);
  const size_t size = options->struct_size;
  if (size < min_size || size > (size_t(1) << 20))
    fail(gptoss_status_invalid_argument, "{}->struct_size is {} (expected sizeof, at least {})",
         what, options->struct_size, min_size);
}

// Copies what the caller's (possibly older, smaller) struct holds over defaults.
template <typename T>
T read_options(const T* options, const T& defaults) {
  T out = defaults;
  const size_t n = std::min(options->struct_size, sizeof(T));
  std::memcpy(static_cast<void*>(&out), options, n);
  out.struct_size = sizeof(T);
  return out;
}

}  // namespace gptoss::api
