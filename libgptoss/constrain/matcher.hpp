#pragma once
// One sequence's position in a Grammar: a set of threads, each a lexeme DFA state (or a
// special token expected next) on top of a stack of grammar positions to continue with, the
// stacks stored as shared-tail lists in an arena. Several threads live at once where the
// grammar is ambiguous so far (anyOf branches with a common prefix, a number that may go on).
// One thread at a time.
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "libgptoss/constrain/grammar.hpp"
#include "libgptoss/constrain/token_mask.hpp"

namespace gptoss::constrain {

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const Grammar> grammar);

  void reset();
  // Advances by one token; false (and unchanged) if the grammar does not allow it here.
  bool accept_token(uint32_t token);
  // Advances by raw bytes (tests, and prefilled text); false (and unchanged) if not allowed.
  bool accept_bytes(std::string_view bytes);
  // Whether accept_token would succeed, by the same steps, without advancing.
  bool allows_token(uint32_t token);
  // Overwrites `mask` (sized for the vocabulary) with the tokens allowed next.
  void fill_mask(TokenMask& mask);
  // The same, less the tokens after which the cheapest completion (cost()) would exceed
  // `limit`: what lets an output be closed within a token budget. Returns whether the limit
  // held back a token that some thread allowed (the union over threads may still hold it).
  bool fill_mask(TokenMask& mask, uint64_t limit);
  // The cheapest completion from here (Grammar::min_cost's measure: bytes plus special tokens).
  uint64_t cost() const;
  // cost() after `token`, without advancing; Grammar::kNoCompletion if it is not allowed.
  uint64_t cost_after(uint32_t token);
  // Whether the grammar is complete and allows nothing more.
  bool finished() const;
  const Grammar& grammar() const { return *grammar_; }

  // Most threads a matcher keeps; a grammar so ambiguous that it needs more fails with
  // insufficient_resources rather than slowing down without bound.
  static constexpr size_t kMaxThreads = 4096;
  // fill_mask's limit that limits nothing.
  static constexpr uint64_t kNoLimit = UINT64_MAX;

 private:
  static constexpr uint32_t kNil = 0xffffffffu;
  static constexpr int32_t kSpecialState = -1;
  struct Node {
    uint32_t pos;     // the symbol being matched, or the next one to match
    uint32_t parent;  // what follows when this alternative ends (kNil: the grammar ends)
    uint64_t hash;    // of the whole stack, for deduplication
    uint64_t after;   // the cheapest completion of the stack below: what follows when this alternative ends
  };
  struct Thread {
    uint32_t node;  // kNil: the grammar is complete
    int32_t state;  // DFA state of the lexeme at nodes_[node].pos, or kSpecialState
  };

  uint32_t push_node(uint32_t pos, uint32_t parent);
  void expand(uint32_t pos, uint32_t parent, std::vector<Thread>& out);
  void step_byte(const std::vector<Thread>& in, uint8_t byte, std::vector<Thread>& out);
  void step_special(const std::vector<Thread>& in, uint32_t token, std::vector<Thread>& out);
  // Sets the tokens below the exit's trie node whose rest (after exit.offset bytes)
  // continuation_ accepts, walking the subtree.
  void check_exit(const LexemeTokens::Exit& exit, TokenMask& mask, uint64_t limit);
  // Sets the tokens the DFA of `lexeme` consumes entirely from `state` into a state at most
  // `max_to_accept` bytes from acceptance.
  void set_inside_within(uint32_t lexeme, int32_t state, uint64_t max_to_accept, TokenMask& mask);
  uint64_t thread_cost(const Thread& t) const;
  uint64_t min_cost(const std::vector<Thread>& threads) const;
  void dedup(std::vector<Thread>& threads) const;
  bool same_stack(uint32_t a, uint32_t b) const;
  // Threads after `token` into a_ (empty if not allowed); nodes past the returned mark are new.
  size_t step_token(uint32_t token);
  // Threads after `bytes` from threads_ into a_.
  void step_bytes(std::string_view bytes);
  bool commit(std::vector<Thread>& next, size_t mark);
  void collect_garbage();

  std::shared_ptr<const Grammar> grammar_;
  std::vector<Node> nodes_;
  std::vector<Thread> threads_;
  // Scratch, kept to avoid allocations per byte.
  std::vector<Thread> a_, b_, continuation_;
  std::vector<std::pair<uint32_t, uint32_t>> work_;
  std::vector<std::vector<Thread>> levels_;  // check_exit: threads after d bytes of a rest
  std::vector<size_t> marks_;                // ... and the arena size then
  size_t live_nodes_after_gc_ = 0;
  bool held_back_ = false;  // fill_mask's limit held back a token
};

}  // namespace gptoss::constrain
