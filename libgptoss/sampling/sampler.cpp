#include "libgptoss/sampling/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "libgptoss/common/error.hpp"

namespace gptoss {

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

double Sampler::uniform() { return double(rng_() >> 11) * (1.0 / 9007199254740992.0); }

uint32_t Sampler::sample(std::span<const float> logits, std::span<const uint32_t> history) {
  const size_t V = logits.size();
  if (V == 0) fail(gptoss_status_invalid_state, "no logits to sample from");
  work_.assign(logits.begin(), logits.end());
  for (float& l : work_)
    if (std::isnan(l)) l = -INFINITY;  // a NaN logit can never be chosen

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

  // Log-probabilities of the penalised distribution (temperature 1), for reporting.
  const float mx = *std::max_element(work_.begin(), work_.end());
  double z = 0.0;
  for (float l : work_) z += std::exp(double(l) - mx);
  const double log_z = double(mx) + std::log(z);
  auto logprob = [&](uint32_t t) { return float(double(work_[t]) - log_z); };

  uint32_t chosen;
  if (p.temperature == 0.0f) {
    chosen = uint32_t(std::max_element(work_.begin(), work_.end()) - work_.begin());  // lowest id on ties
  } else {
    // Candidates sorted by logit (descending, then id), truncated by top-k.
    order_.resize(V);
    std::iota(order_.begin(), order_.end(), 0u);
    auto by_logit = [&](uint32_t a, uint32_t b) {
      return work_[a] > work_[b] || (work_[a] == work_[b] && a < b);
    };
    size_t n = (p.top_k > 0 && p.top_k < V) ? p.top_k : V;
    if (n < V) {
      std::partial_sort(order_.begin(), order_.begin() + std::ptrdiff_t(n), order_.end(), by_logit);
    } else {
      std::sort(order_.begin(), order_.end(), by_logit);
    }
    std::vector<double> probs(n);
    const double top = work_[order_[0]];
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) sum += probs[i] = std::exp((work_[order_[i]] - top) / p.temperature);
    for (auto& q : probs) q /= sum;
    // min-p: keep tokens at least min_p times as likely as the best.
    if (p.min_p > 0.0f) {
      size_t keep = 1;
      while (keep < n && probs[keep] >= p.min_p * probs[0]) ++keep;
      n = keep;
    }
    // top-p: the smallest prefix whose mass reaches top_p.
    if (p.top_p < 1.0f) {
      double mass = 0.0;
      size_t keep = 0;
      while (keep < n) {
        mass += probs[keep++];
        if (mass >= p.top_p) break;
      }
      n = keep;
    }
    double total = 0.0;
    for (size_t i = 0; i < n; ++i) total += probs[i];
    double r = uniform() * total;
    chosen = order_[n - 1];
    for (size_t i = 0; i < n; ++i) {
      r -= probs[i];
      if (r < 0.0) {
        chosen = order_[i];
        break;
      }
    }
  }

  has_last_ = true;
  last_chosen_ = {chosen, logprob(chosen)};
  last_top_.clear();
  if (p.top_logprobs > 0) {
    std::vector<uint32_t> idx(V);
    std::iota(idx.begin(), idx.end(), 0u);
    const size_t k = std::min<size_t>(p.top_logprobs, V);
    std::partial_sort(idx.begin(), idx.begin() + std::ptrdiff_t(k), idx.end(), [&](uint32_t a, uint32_t b) {
      return work_[a] > work_[b] || (work_[a] == work_[b] && a < b);
    });
    for (size_t i = 0; i < k; ++i) last_top_.push_back({idx[i], logprob(idx[i])});
  }
  return chosen;
}

}  // namespace gptoss
