#pragma once
// The speculative decoding loop of one sequence: propose (jump-forward tokens the grammar
// forces, then a drafter's guess), verify in one step, keep the agreeing prefix, roll back the
// rest, and adapt the draft length to the acceptance measured on this sequence.
#include <chrono>
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
  bool cost_bound = true;                    // DraftCost limits the drafter tokens
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

// Bounds what drafting costs when it fails, with the steps' measured durations: the time lost
// to drafted tokens (a step's time beyond the plain decode steps that would have given the same
// tokens) stays within kMaxShare of what plain decoding takes for the tokens so far, counted as
// at least kGrace tokens, so that over the first kGrace tokens failed drafts cost at most
// kMaxShare * kGrace plain steps. kMaxShare is 2.5 %, leaving room under the 3 % promised
// (docs/speculative.md) for the noise of the durations the costs come from. Drafts that are
// kept save steps, and the time saved may be spent on later drafts. Before a drafted token's
// cost was measured it is taken as a whole plain step: a step that processes several tokens
// together costs no more than processing them one by one.
class DraftCost {
 public:
  static constexpr double kMaxShare = 0.025;
  static constexpr size_t kGrace = 64;
  // Drafted tokens the next step may verify with the bound kept were none of them kept;
  // `decode` as in record(). None in the first decode step: it measures a plain one.
  size_t affordable(bool decode) const;
  // After a step that verified `drafted` tokens (forced ones included) and gave `tokens`, in
  // `seconds`. `decode`: the step processed nothing else of this sequence (no prompt), so its
  // duration compares with a plain decode step's.
  void record(size_t drafted, size_t tokens, double seconds, bool decode);
  void reset() { *this = DraftCost{}; }

 private:
  // A measured drafted token's cost is taken this much larger, for the noise in the durations
  // it comes from.
  static constexpr double kMargin = 1.25;
  double token_cost() const { return per_token_measured_ ? kMargin * per_token_ : per_token_; }
  double plain_seconds_ = 0;  // a plain decode step, smoothed (0: none measured yet)
  double per_token_ = 1.0;    // a drafted token's cost, in plain steps
  bool per_token_measured_ = false;
  double lost_ = 0;    // plain steps lost to drafting so far (negative: saved)
  double tokens_ = 0;  // tokens produced so far
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
  DraftCost cost_;
  SpeculatorStats stats_;
  std::vector<uint32_t> draft_, sequence_;
  PendingDraft pending_;
  size_t forced_ = 0, proposed_ = 0;  // of the pending draft, before the grammar's filter
  bool drafted_ = false;              // draft() ran; verify() has not
  // When draft() began, and whether this sequence had only its last token to process then:
  // what DraftCost learns a step's cost from.
  std::chrono::steady_clock::time_point step_begin_;
  bool decode_step_ = false;
};

}  // namespace gptoss::speculative
