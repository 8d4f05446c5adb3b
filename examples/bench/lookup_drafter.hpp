#pragma once
// The library's prompt lookup and adaptive draft length (libgptoss/speculative), which the C
// API runs only inside a verification, for --prompt-lookup's forced answer. A header of its
// own: the library's internal headers and include/gptoss.hpp cannot meet in one file (both
// name a gptoss::tokenizer).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace gptoss::bench {

class LookupDrafter {
 public:
  explicit LookupDrafter(size_t max_draft);
  ~LookupDrafter();
  LookupDrafter(const LookupDrafter&) = delete;
  LookupDrafter& operator=(const LookupDrafter&) = delete;
  // Tokens to ask for in a decode step now (the speculator's adaptive length and cost bound).
  size_t length() const;
  // Appends at most `max` tokens proposed to follow `sequence`.
  void propose(std::span<const uint32_t> sequence, size_t max, std::vector<uint32_t>& out);
  // After a decode step that verified `drafted` proposed tokens and kept `kept`, in `seconds`.
  void update(size_t drafted, size_t kept, double seconds);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gptoss::bench
