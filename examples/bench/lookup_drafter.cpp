#include "lookup_drafter.hpp"

#include <algorithm>

#include "libgptoss/speculative/drafters.hpp"
#include "libgptoss/speculative/speculator.hpp"

namespace gptoss::bench {

struct LookupDrafter::Impl {
  speculative::PromptLookup lookup;
  speculative::DraftLength length;
  speculative::DraftCost cost;
};

LookupDrafter::LookupDrafter(size_t max_draft)
    : impl_(new Impl{speculative::PromptLookup{}, speculative::DraftLength(max_draft),
                     speculative::DraftCost{}}) {}
LookupDrafter::~LookupDrafter() = default;

size_t LookupDrafter::length() const {
  return std::min(impl_->length.next(), impl_->cost.affordable(true));
}

void LookupDrafter::propose(std::span<const uint32_t> sequence, size_t max,
                            std::vector<uint32_t>& out) {
  impl_->lookup.propose(sequence, max, out);
}

void LookupDrafter::update(size_t drafted, size_t kept, double seconds) {
  impl_->length.update(drafted, kept);
  impl_->cost.record(drafted, kept + 1, seconds, true);
}

}  // namespace gptoss::bench
