#include "libgptoss/sampling/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "libgptoss/common/error.hpp"

namespace gptoss {

namespace {
// Index of the largest value, the lowest on ties (no NaN in v). Not std::max_element: it
// compares through the iterator to the best so far, a chain of dependent loads on every
// element of a 201088-token row; this loop's branch is almost never taken.
size_t argmax(const std::vector<float>& v) {
  size_t best = 0;
  float top = v[0];
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > top) top = v[i], best = i;
  return best;
}
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

uint32_t Sampler::pick_among_allowed(std::span<const uint32_t> allowed, size_t n_allowed) {
  size_t k = params_.temperature == 0.0f ? 0 : std::min(n_allowed - 1, size_t(uniform() * double(n_allowed)));
  for (size_t i = 0; i < work_.size(); ++i)
    if (i / 32 < allowed.size() && ((allowed[i / 32] >> (i % 32)) & 1u) && k-- == 0) return uint32_t(i);
  fail(gptoss_status_internal, "no allowed token found");
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

  uint32_t chosen;
  const bool keeps_all = p.top_p >= 1.0f && p.min_p <= 0.0f && (p.top_k == 0 || p.top_k >= V);
  if (!allowed.empty() && work_[argmax(work_)] == -INFINITY) {
    chosen = pick_among_allowed(allowed, n_allowed);  // the model gives no allowed token any weight
  } else if (p.temperature == 0.0f) {
    chosen = uint32_t(argmax(work_));
  } else if (keeps_all) {
    // Every token, in id order: one pass of exp and one of selection (the path below would
    // also build an identity order, normalise and sum again).
    const double top = work_[argmax(work_)];
    probs_.resize(V);
    double sum = 0.0;
    // Masked-out tokens (-inf) skip the exp: under a sparse mask most of the vocabulary.
    for (size_t i = 0; i < V; ++i)
      sum += probs_[i] = work_[i] == -INFINITY ? 0.0 : std::exp((work_[i] - top) / p.temperature);
    double r = uniform() * sum;
    chosen = uint32_t(argmax(work_));  // if rounding leaves r >= 0 after the last token
    for (size_t i = 0; i < V; ++i) {
      r -= probs_[i];
      if (r < 0.0) {
        chosen = uint32_t(i);
        break;
      }
    }
  } else {
    // Candidates sorted by logit (descending, then id), truncated by top-k. Only as much of
    // the 201088-entry order as the truncation needs is sorted: a head of 1024 covers
    // top-p in practice; the full sort is the fallback.
    order_.resize(V);
    std::iota(order_.begin(), order_.end(), 0u);
    auto by_logit = [&](uint32_t a, uint32_t b) {
      return work_[a] > work_[b] || (work_[a] == work_[b] && a < b);
    };
    const bool truncates = p.top_p < 1.0f || p.min_p > 0.0f;
    size_t n = (p.top_k > 0 && p.top_k < V) ? p.top_k : V;
    if (!truncates && n == V) {
      // No truncation: the order does not matter.
    } else if (n < V) {
      std::partial_sort(order_.begin(), order_.begin() + std::ptrdiff_t(n), order_.end(), by_logit);
    } else {
      const size_t head = std::min<size_t>(V, 1024);
      std::partial_sort(order_.begin(), order_.begin() + std::ptrdiff_t(head), order_.end(), by_logit);
      double head_mass = 0.0, all_mass = 0.0;
      const double top = work_[order_[0]];
      for (size_t i = 0; i < V; ++i) {
        const double e = std::exp((work_[order_[i]] - top) / p.temperature);
        all_mass += e;
        if (i < head) head_mass += e;
      }
      // min-p keeps only tokens near the best (inside the head unless it is flat); top-p
      // needs the head to reach its mass.
      const bool head_enough = (p.top_p >= 1.0f || head_mass >= double(p.top_p) * all_mass) &&
                               (p.min_p <= 0.0f || head == V ||
                                std::exp((work_[order_[head - 1]] - top) / p.temperature) < p.min_p);
      if (!head_enough) std::sort(order_.begin(), order_.end(), by_logit);
    }
    // A member, not a fresh vector: 1.6 MB for the whole vocabulary, new pages (faults) on
    // every sample.
    std::vector<double>& probs = probs_;
    probs.resize(n);
    double top = -INFINITY;
    for (size_t i = 0; i < n; ++i) top = std::max(top, double(work_[order_[i]]));
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) sum += probs[i] = std::exp((work_[order_[i]] - top) / p.temperature);
    for (auto& q : probs) q /= sum;
    // min-p: keep tokens at least min_p times as likely as the best (order_ is sorted here).
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
    chosen = order_[0];  // if rounding leaves r >= 0 after the last candidate
    for (size_t i = 0; i < n; ++i) {
      r -= probs[i];
      if (r < 0.0) {
        chosen = order_[i];
        break;
      }
    }
  }

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
