#include "lookup_drafter.hpp"

#include "libgptoss/speculative/drafters.hpp"
#include "libgptoss/speculative/speculator.hpp"

namespace gptoss::bench {

struct LookupDrafter::Impl {
  speculative::PromptLookup lookup;
  speculative::DraftLength length;
};

LookupDrafter::LookupDrafter(size_t max_draft)
    : impl_(new Impl{speculative::PromptLookup{}, speculative::DraftLength(max_draft)}) {}
LookupDrafter::~LookupDrafter() = default;

size_t LookupDrafter::length() const { return impl_->length.next(); }

void LookupDrafter::propose(std::span<const uint32_t> sequence, size_t max,
                            std::vector<uint32_t>& out) {
  impl_->lookup.propose(sequence, max, out);
}

void LookupDrafter::update(size_t drafted, size_t kept) { impl_->length.update(drafted, kept); }

}  // namespace gptoss::bench
