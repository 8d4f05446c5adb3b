#pragma once
// Turns one sequence's sampled tokens into output events: Harmony messages through the
// library's tolerant streaming parser (malformed model output is recovered, never an error),
// or raw text for /v1/completions. Stop strings end the answer text; runs on the scheduler
// thread.
#include <memory>
#include <string>
#include <vector>

#include <gptoss.hpp>
#include "engine/generation.hpp"

namespace gptoss_server {

class OutputTracker {
 public:
  virtual ~OutputTracker() = default;
  // A sampled token and its log-probabilities (null when not asked for).
  virtual void on_token(uint32_t token, const TokenLogprob* logprob, std::vector<OutputEvent>& out) = 0;
  // The output ended (stop token, stop string, or `cut` by the length limit): closes what is
  // open.
  virtual void finish(std::vector<OutputEvent>& out, bool cut) = 0;
  // A stop string matched: nothing more is emitted and the sequence should end.
  virtual bool stopped() const = 0;
  // Output tokens that belong to analysis messages.
  virtual size_t reasoning_tokens() const { return 0; }
};

// Harmony output of a generation that began right after "<|start|>assistant".
std::unique_ptr<OutputTracker> make_harmony_tracker(gptoss_tokenizer_t tokenizer,
                                                    std::vector<std::string> stop);
// Raw text: one message without a header, every token's bytes decoded as UTF-8.
std::unique_ptr<OutputTracker> make_text_tracker(gptoss_tokenizer_t tokenizer, std::vector<std::string> stop);

// Whether a message is answer text (final, a preamble, or no channel) rather than reasoning
// or a tool call.
bool is_answer(const MessageHeader& header);

}  // namespace gptoss_server
