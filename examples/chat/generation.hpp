#pragma once
// The decode loop of one context, shared pieces of every mode: samplers, stop tokens,
// per-token diagnostics and the stats line.
#include <atomic>
#include <cstdio>
#include <vector>

#include <gptoss.hpp>
#include "cli_options.hpp"

namespace gptoss_cli {

// Receives each generated token as soon as it is sampled.
class TokenSink {
 public:
  virtual ~TokenSink() = default;
  virtual void on_token(uint32_t token) = 0;
};

// Tokens that end a turn: <|return|> and <|call|>; without Harmony also <|endoftext|>.
class StopTokens {
 public:
  StopTokens(gptoss_tokenizer_t tokenizer, bool harmony);
  bool contains(uint32_t token) const;
  const std::vector<uint32_t>& ids() const { return ids_; }

 private:
  std::vector<uint32_t> ids_;
};

struct GenerationStats {
  size_t prompt_tokens = 0;      // tokens processed before the first sample
  double prefill_seconds = 0;
  size_t generated_tokens = 0;
  double first_token_seconds = 0;  // from the start of prefill to the first sampled token
  double decode_seconds = 0;       // from the first sampled token to the last
  bool interrupted = false;
  bool context_full = false;
  gptoss_speculator_stats speculation{};  // with --draft: the speculator's counts (cumulative)

  double prefill_tokens_per_second() const;
  double decode_tokens_per_second() const;  // tokens after the first over decode_seconds
  void print(std::FILE* out) const;
};

uint64_t resolve_seed(const Options& options);
gptoss::sampler make_sampler(const Options& options, uint64_t seed);
// A context of options.context_length tokens, drawing from `kvcache` when given.
gptoss::context make_context(gptoss_model_t model, const Options& options,
                             gptoss_kvcache_t kvcache);
// A shared pool of options.max_kv tokens for `max_sequences` contexts, or null without --max-kv.
gptoss::kvcache make_kvcache(gptoss_model_t model, const Options& options, size_t max_sequences);

// Token id, its text, entropy of the distribution, top-1 candidate and the probabilities,
// from the context's current logits (which must be available), as one line on `out`.
class TokenDiagnostics {
 public:
  TokenDiagnostics(gptoss_model_t model, gptoss_tokenizer_t tokenizer);
  void print(std::FILE* out, gptoss_context_t context, uint32_t sampled, const char* prefix);

 private:
  gptoss_tokenizer_t tokenizer_;
  std::vector<float> logits_;
};

// With --draft ngram or --draft PATH (the model loaded like the main one): the speculator that
// generate() runs; none with --draft none.
gptoss::speculator make_speculator(const Options& options);

// Processes the context's pending tokens, then samples up to options.max_tokens tokens,
// appending each (but not a stop token) and feeding it to `sink`. Stops early on a stop
// token, a finished `constraint` (the one attached to `sampler`, if any), a full context, or
// when `*interrupt` becomes true. With `speculator`, several tokens per step, the same ones.
GenerationStats generate(gptoss_model_t model, gptoss_context_t context, gptoss_sampler_t sampler,
                         gptoss_tokenizer_t tokenizer, const Options& options, TokenSink& sink,
                         const std::atomic<bool>* interrupt,
                         gptoss_constraint_t constraint = nullptr,
                         gptoss_speculator_t speculator = nullptr);

}  // namespace gptoss_cli
