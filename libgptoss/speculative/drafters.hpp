#pragma once
// Drafters: what proposes the tokens a speculative step verifies. Each sees the sequence so
// far (prompt and output, the last token sampled but maybe not yet processed) and proposes up
// to `max` tokens that may follow it; proposing none is always allowed.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "libgptoss/runtime/context.hpp"
#include "libgptoss/runtime/model.hpp"
#include "libgptoss/sampling/sampler.hpp"

namespace gptoss::speculative {

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Appends at most `max` proposed tokens to `out`.
  virtual void propose(std::span<const uint32_t> sequence, size_t max,
                       std::vector<uint32_t>& out) = 0;
};

// Prompt lookup: the tokens that followed the latest earlier occurrence of the sequence's last
// n tokens, for the longest n from kMaxNgram down to kMinNgram that occurs. What agent loops,
// code edits and quoting repeat.
class PromptLookup final : public Drafter {
 public:
  static constexpr size_t kMaxNgram = 3, kMinNgram = 1;
  // Tokens searched back from the end (a longer sequence's start is not looked at).
  static constexpr size_t kSearchWindow = size_t(1) << 16;
  void propose(std::span<const uint32_t> sequence, size_t max, std::vector<uint32_t>& out) override;
};

// A smaller model with the same vocabulary, on its own context: its greedy continuation.
// The context follows the target's sequence by its longest common prefix, so tokens the
// target rejected are rolled back there too.
class DraftModel final : public Drafter {
 public:
  // context_length: tokens the draft context may hold (the target context's length).
  DraftModel(std::shared_ptr<const Model> model, size_t context_length);
  void propose(std::span<const uint32_t> sequence, size_t max, std::vector<uint32_t>& out) override;

 private:
  std::unique_ptr<Context> ctx_;
  Sampler greedy_;
};

}  // namespace gptoss::speculative
