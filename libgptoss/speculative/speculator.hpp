#pragma once
// The speculative decoding loop of one sequence: propose (jump-forward tokens the grammar
// forces, then a drafter's guess), verify in one step, keep the agreeing prefix, roll back the
// rest, and adapt the draft length to the acceptance measured on this sequence.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "libgptoss/speculative/drafters.hpp"
#include "libgptoss/speculative/verify.hpp"

namespace gptoss::speculative {

struct SpeculatorOptions {
  bool prompt_lookup = true;
  bool jump_forward = true;
  std::shared_ptr<const Model> draft_model;  // null: none (it replaces prompt lookup)
  size_t max_draft = 8;                      // drafter tokens per step; 0: none
};

struct SpeculatorStats {
  uint64_t steps = 0;       // verification steps
  uint64_t drafted = 0;     // drafted tokens verified (forced ones included)
  uint64_t accepted = 0;    // of them, kept
  uint64_t forced = 0;      // of the drafted, forced by the grammar (always kept)
  size_t draft_length = 0;  // what the next step would ask the drafter for
};

// Chooses how many drafter tokens a step verifies. A drafted token is worth verifying while
// the chance that it and all before it are kept, alpha^k, exceeds kWorth (alpha: the per-token
// acceptance estimated on this sequence, recent steps weighing more). When that allows none,
// drafting pauses and probes one token after 1, 2, 4 ... 64 plain steps, so a drafter that is
// never right costs one two-token step in 65 at most.
class DraftLength {
 public:
  static constexpr double kWorth = 0.3, kDecay = 0.7;
  static constexpr size_t kMaxPause = 64;
  explicit DraftLength(size_t max) : max_(max) {}
  size_t next() const;  // tokens to ask for now
  // After a step that verified `drafted` drafter tokens (0: paused or none proposed).
  void update(size_t drafted, size_t accepted);
  void reset();

 private:
  size_t max_;
  double kept_ = 1.2, tried_ = 2.0;  // decayed counts: alpha = kept / tried, 0.6 at first
  size_t pause_ = 0, failed_probes_ = 0;
};

class Speculator {
 public:
  explicit Speculator(SpeculatorOptions options);
  // One step on `ctx` (see verify()): at most `max_tokens` (>= 1) tokens come back.
  VerifyResult step(Context& ctx, Sampler& sampler, constrain::Constraint* constraint,
                    constrain::TokenMask* scratch, std::span<const uint32_t> stop,
                    size_t max_tokens);
  // The same step in two halves around the processing of `ctx`, which may batch it with other
  // contexts (a server's continuous batching): draft() proposes and appends the draft
  // (append_draft) and returns its length; verify() finishes it (finish_draft, the processing
  // included if still to do), with each token's log-probabilities when `logprobs`.
  size_t draft(Context& ctx, const constrain::Constraint* constraint,
               std::span<const uint32_t> stop, size_t max_tokens);
  VerifyResult verify(Context& ctx, Sampler& sampler, constrain::Constraint* constraint,
                      constrain::TokenMask* scratch, std::span<const uint32_t> stop,
                      bool logprobs = false);
  // Forgets the pending draft, taking it out of `ctx` (its context) when it is there: the
  // processing that would verify it failed. The sampler never saw it.
  void abandon(Context& ctx);
  // Most tokens the pending draft's verify() gives back (0: none pending).
  size_t pending_tokens() const { return drafted_ ? pending_.used + 1 : 0; }
  // A new sequence: forgets the measured acceptance and the counts.
  void reset();
  SpeculatorStats stats() const;
  const SpeculatorOptions& options() const { return options_; }

 private:
  // Tokens the grammar allows alone from here (at most `max`), without changing `constraint`.
  static void forced_tokens(const constrain::Constraint& constraint, size_t max,
                            std::vector<uint32_t>& out);

  SpeculatorOptions options_;
  std::unique_ptr<Drafter> drafter_;
  DraftLength length_;
  SpeculatorStats stats_;
  std::vector<uint32_t> draft_, sequence_;
  PendingDraft pending_;
  size_t forced_ = 0, proposed_ = 0;  // of the pending draft, before the grammar's filter
  bool drafted_ = false;              // draft() ran; verify() has not
};

}  // namespace gptoss::speculative
