#include "libgptoss/sampling/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "backends/common/sampling.hpp"
#include "libgptoss/common/error.hpp"

namespace gptoss {

namespace {
size_t argmax(const std::vector<float>& v) { return backends::sample_argmax(v.data(), v.size()); }
}  // namespace

void SamplerParams::validate() const {
  auto bad = [](const char* field, double value, const char* range) {
    fail(gptoss_status_invalid_argument, "sampler option {} = {} is out of range ({})", field,
         value, range);
  };
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) bad("temperature", temperature, ">= 0");
  if (!(top_p > 0.0f && top_p <= 1.0f)) bad("top_p", top_p, "(0, 1]");
  if (!(min_p >= 0.0f && min_p < 1.0f)) bad("min_p", min_p, "[0, 1)");
  if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty))
    bad("repetition_penalty", repetition_penalty, "> 0");
  if (!std::isfinite(presence_penalty)) bad("presence_penalty", presence_penalty, "finite");
  if (!std::isfinite(frequency_penalty)) bad("frequency_penalty", frequency_penalty, "finite");
  if (top_logprobs > 20) bad("top_logprobs", top_logprobs, "0..20");
}

Sampler::Sampler(const SamplerParams& params) : params_(params), rng_(params.seed) {
  params_.validate();
}

void Sampler::reseed(uint64_t seed) {
  params_.seed = seed;
  rng_.seed(seed);
}

double Sampler::uniform() { return to_uniform(rng_()); }

bool Sampler::needs_host_logits() const {
  return params_.repetition_penalty != 1.0f || params_.presence_penalty != 0.0f ||
         params_.frequency_penalty != 0.0f;
}

double Sampler::peek_uniform() const {
  std::mt19937_64 copy = rng_;
  return to_uniform(copy());
}

void Sampler::record(uint32_t token, float logprob, std::vector<TokenLogprob> alternatives) {
  has_last_ = true;
  last_token_ = token;
  last_chosen_ = {token, logprob};
  last_top_ = std::move(alternatives);
  logprobs_ready_ = true;
}

size_t Sampler::apply_mask(std::span<const uint32_t> allowed) {
  const size_t V = work_.size();
  size_t n_allowed = 0;
  for (size_t w = 0; w * 32 < V; ++w) {
    const uint32_t bits = w < allowed.size() ? allowed[w] : 0u;
    const size_t end = std::min(V, w * 32 + 32);
    if (bits == 0xffffffffu && end == w * 32 + 32) {
      n_allowed += 32;
      continue;
    }
    for (size_t i = w * 32; i < end; ++i) {
      if ((bits >> (i - w * 32)) & 1u) ++n_allowed;
      else work_[i] = -INFINITY;
    }
  }
  return n_allowed;
}

uint32_t Sampler::sample(std::span<const float> logits, std::span<const uint32_t> history,
                         std::span<const uint32_t> allowed) {
  const size_t V = logits.size();
  if (V == 0) fail(gptoss_status_invalid_state, "no logits to sample from");
  work_.resize(V);
  for (size_t i = 0; i < V; ++i)  // a NaN logit can never be chosen
    work_[i] = std::isnan(logits[i]) ? -INFINITY : logits[i];

  // Penalties over the recent window.
  const SamplerParams& p = params_;
  if (p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) {
    const size_t n = std::min<size_t>(history.size(), p.penalty_window);
    std::unordered_map<uint32_t, uint32_t> counts;
    for (size_t i = history.size() - n; i < history.size(); ++i) ++counts[history[i]];
    for (const auto& [tok, count] : counts) {
      if (tok >= V) continue;
      float& l = work_[tok];
      if (p.repetition_penalty != 1.0f) l = l > 0 ? l / p.repetition_penalty : l * p.repetition_penalty;
      l -= p.presence_penalty + p.frequency_penalty * float(count);
    }
  }

  size_t n_allowed = V;
  if (!allowed.empty()) {
    n_allowed = apply_mask(allowed);
    if (n_allowed == 0) fail(gptoss_status_invalid_state, "the token mask allows none of the {} tokens", V);
  }

  // The choice is the device's (backends/common/sampling.hpp): the same token for the same
  // logits and uniform whether the backend or the host samples.
  size_t first_allowed = 0;
  if (!allowed.empty()) {
    const size_t words = (V + 31) / 32;
    if (allowed.size() < words) {  // missing words allow nothing (as in apply_mask)
      mask_.assign(allowed.begin(), allowed.end());
      mask_.resize(words, 0u);
      allowed = mask_;
    }
    while (allowed[first_allowed / 32] == 0) first_allowed += 32;
    while (!((allowed[first_allowed / 32] >> (first_allowed % 32)) & 1u)) ++first_allowed;
  }
  const double u = p.temperature == 0.0f ? 0.0 : uniform();
  const uint32_t chosen = backends::sample_choose(
      {p.temperature, p.top_k, p.top_p, p.min_p}, u, work_.data(), V,
      allowed.empty() ? nullptr : allowed.data(), n_allowed, first_allowed, scratch_);

  has_last_ = true;
  last_token_ = chosen;
  logprobs_ready_ = false;
  return chosen;
}

// Log-probabilities of the penalised distribution (temperature 1) of the last sample, for
// reporting: work_ still holds its logits.
void Sampler::compute_logprobs() const {
  if (logprobs_ready_) return;
  const size_t V = work_.size();
  const float mx = work_[argmax(work_)];
  double z = 0.0;
  for (float l : work_) z += std::exp(double(l) - mx);
  const double log_z = double(mx) + std::log(z);
  auto logprob = [&](uint32_t t) { return float(double(work_[t]) - log_z); };
  last_chosen_ = {last_token_, logprob(last_token_)};
  last_top_.clear();
  if (params_.top_logprobs > 0) {
    std::vector<uint32_t> idx(V);
    std::iota(idx.begin(), idx.end(), 0u);
    const size_t k = std::min<size_t>(params_.top_logprobs, V);
    std::partial_sort(idx.begin(), idx.begin() + std::ptrdiff_t(k), idx.end(), [&](uint32_t a, uint32_t b) {
      return work_[a] > work_[b] || (work_[a] == work_[b] && a < b);
    });
    for (size_t i = 0; i < k; ++i) last_top_.push_back({idx[i], logprob(idx[i])});
  }
  logprobs_ready_ = true;
}

const TokenLogprob& Sampler::last_chosen() const {
  compute_logprobs();
  return last_chosen_;
}

const std::vector<TokenLogprob>& Sampler::last_alternatives() const {
  compute_logprobs();
  return last_top_;
}

}  // namespace gptoss
