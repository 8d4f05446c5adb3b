#pragma once
// The C handles: each wraps the core object it names, with an atomic reference count.
#include <algorithm>
#include <cstring>
#include <memory>

#include "libgptoss/api/api_util.hpp"
#include "libgptoss/api/handles_constrain.hpp"
#include "libgptoss/api/handles_tokenizer.hpp"
#include "libgptoss/api/struct_versions.hpp"
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
