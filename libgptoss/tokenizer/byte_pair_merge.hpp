#pragma once
// tiktoken's byte-pair merge: start from single bytes and repeatedly merge the adjacent pair
// whose concatenation has the lowest rank (leftmost on ties) until no pair is a token.
#include <cstdint>
#include <string_view>
#include <vector>

#include "libgptoss/tokenizer/rank_table.hpp"

namespace gptoss::tokenizer {

// Appends the ids of `piece` (non-empty) to `out`.
void byte_pair_merge(const RankTable& ranks, std::string_view piece, std::vector<uint32_t>& out);

}  // namespace gptoss::tokenizer
