#pragma once
// YaRN inverse frequencies and attention concentration from the plugin ABI's rope parameters
// (OpenAI's reference: a ramp over the dimension index between the bounds set by
// beta_fast/beta_slow; rounded bounds only when params.truncate). Header-only: every backend
// builds its rotation table from the same double-precision values.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "gptoss/backend.h"

namespace gptoss::backends {

// inv[i] for i < head_dim / 2; returns the concentration (1 without scaling).
inline double yarn_inv_freq(const gptoss_rope_params& p, size_t head_dim, double* inv) {
  const size_t half = head_dim / 2;
  for (size_t i = 0; i < half; ++i) inv[i] = 1.0 / std::pow(p.theta, double(2 * i) / double(head_dim));
  if (p.scaling_factor <= 1.0) return 1.0;
  const double pi = 3.14159265358979323846;
  double low = double(half) * std::log(p.original_context / (p.beta_fast * 2 * pi)) / std::log(p.theta);
  double high = double(half) * std::log(p.original_context / (p.beta_slow * 2 * pi)) / std::log(p.theta);
  if (p.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  for (size_t i = 0; i < half; ++i) {
    const double extrapolation = inv[i];
    const double interpolation = inv[i] / p.scaling_factor;
    const double mask = 1.0 - std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
    inv[i] = interpolation * (1.0 - mask) + extrapolation * mask;
  }
  return 0.1 * std::log(p.scaling_factor) + 1.0;
}

}  // namespace gptoss::backends
