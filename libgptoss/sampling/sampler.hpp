#pragma once
// Turns logits into a token: penalties over a window of recent tokens, then greedy or
// temperature sampling with top-k, top-p and min-p truncation, from a seeded RNG whose
// sequence is the same on every platform (std::mt19937_64 and our own uniform conversion).
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "backends/common/sampling.hpp"
#include "gptoss.h"

namespace gptoss {

struct SamplerParams {
  float temperature = 1.0f;
  uint32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  uint32_t penalty_window = 64;
  uint64_t seed = 0;
  uint32_t top_logprobs = 0;

  // Throws gptoss::Error(invalid_argument) naming the first out-of-range field.
  void validate() const;
};

struct TokenLogprob {
  uint32_t token;
  float logprob;
};

class Sampler {
 public:
  explicit Sampler(const SamplerParams& params);
  void reseed(uint64_t seed);
  const SamplerParams& params() const { return params_; }

  // `history`: the context's tokens (the last penalty_window of them are penalised).
  // `allowed`: empty, or a token mask (bit i % 32 of word i / 32 = token i may be chosen);
  // tokens outside it get -inf after the penalties. Throws gptoss::Error(invalid_state) when
  // the mask allows no token of the logits.
  uint32_t sample(std::span<const float> logits, std::span<const uint32_t> history,
                  std::span<const uint32_t> allowed = {});

  // For sampling done by a backend (gptoss_backend_api::sample, which follows the algorithm
  // of sample() without penalties): whether these parameters need the logits on the host,
  // the uniform the next non-greedy sample draws (then skip_uniform() once it was used), and
  // the backend's result to report as the last sample.
  bool needs_host_logits() const;
  double peek_uniform() const;
  void skip_uniform() { (void)rng_(); }
  void record(uint32_t token, float logprob, std::vector<TokenLogprob> alternatives);

  bool has_last() const { return has_last_; }
  // Log-probabilities of the last sample under the penalised temperature-1 softmax, computed
  // on first request from the kept logits (a pass of exp in double over the vocabulary: too
  // much to pay on every sample when few callers ask).
  const TokenLogprob& last_chosen() const;
  const std::vector<TokenLogprob>& last_alternatives() const;

 private:
  double uniform();  // in [0, 1)
  static double to_uniform(uint64_t bits) { return double(bits >> 11) * (1.0 / 9007199254740992.0); }
  // Sets forbidden logits of work_ to -inf; returns how many tokens stay allowed.
  size_t apply_mask(std::span<const uint32_t> allowed);

  SamplerParams params_;
  std::mt19937_64 rng_;
  std::vector<float> work_;
  std::vector<uint32_t> mask_;  // a caller's short mask, padded to the vocabulary
  backends::SampleScratch scratch_;
  void compute_logprobs() const;

  bool has_last_ = false;
  uint32_t last_token_ = 0;
  // Filled by compute_logprobs() from work_ (the penalised logits of the last sample).
  mutable bool logprobs_ready_ = false;
  mutable TokenLogprob last_chosen_{};
  mutable std::vector<TokenLogprob> last_top_;
};

}  // namespace gptoss
