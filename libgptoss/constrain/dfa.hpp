#pragma once
// Deterministic automata over bytes, compiled from regex.hpp trees (Thompson NFA, subset
// construction, then states that cannot reach acceptance removed, so that every state a DFA
// can be in still leads to a match, and equivalent states merged: fewer states, fewer cached
// token sets). Bytes are grouped into classes that every transition
// treats alike, so a state's row is n_classes wide, not 256.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "libgptoss/constrain/regex.hpp"

namespace gptoss::constrain {

class Dfa {
 public:
  static constexpr int32_t kDead = -1;

  // Throws gptoss::Error(unsupported_argument) when the automaton would need more than
  // `max_states` states (or its NFA more than 8 x that).
  static Dfa compile(const Regex& regex, size_t max_states);

  // kDead when the language is empty.
  int32_t start() const { return start_; }
  int32_t step(int32_t state, uint8_t byte) const {
    return next_[size_t(state) * n_classes_ + byte_class_[byte]];
  }
  bool accepting(int32_t state) const { return accepting_[size_t(state)] != 0; }
  // Whether any byte leads on from `state` (an accepting state may be a dead end).
  bool continues(int32_t state) const { return continues_[size_t(state)] != 0; }
  size_t num_states() const { return accepting_.size(); }
  size_t memory_bytes() const { return next_.size() * sizeof(int32_t) + 2 * accepting_.size() + 256; }

  // For each state, the fewest bytes that lead from it to an accepting state (every state
  // has one: states that cannot reach acceptance are removed).
  std::vector<uint32_t> distances_to_accept() const;

  bool operator==(const Dfa& other) const;
  uint64_t hash() const;

 private:
  void minimize();

  std::array<uint8_t, 256> byte_class_{};
  uint32_t n_classes_ = 1;
  std::vector<int32_t> next_;        // num_states x n_classes, kDead = no transition
  std::vector<uint8_t> accepting_;
  std::vector<uint8_t> continues_;
  int32_t start_ = kDead;
};

}  // namespace gptoss::constrain
