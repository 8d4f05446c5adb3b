#include "libgptoss/tokenizer/rank_table.hpp"

#include <bit>

#include "libgptoss/common/error.hpp"

namespace gptoss::tokenizer {

RankTable::RankTable(std::string_view arena, std::span<const uint32_t> offsets)
    : arena_(arena.data()), offsets_(offsets.data()), byte_rank_(256, kNoRank),
      pair_rank_(65536, kNoRank) {
  const size_t n = offsets.empty() ? 0 : offsets.size() - 1;
  // Load factor <= 0.5 keeps probe chains short.
  slots_.assign(std::bit_ceil(std::max<size_t>(16, n * 2)), Slot{0, 0, kNoRank});
  mask_ = slots_.size() - 1;
  for (uint32_t id = 0; id < n; ++id) {
    const char* p = arena_ + offsets_[id];
    const size_t len = offsets_[id + 1] - offsets_[id];
    if (len == 0) fail(gptoss_status_invalid_argument, "token {} is empty", id);
    if (find(p, len) != kNoRank) {
      fail(gptoss_status_invalid_argument, "tokens {} and {} have the same bytes",
           find(p, len), id);
    }
    if (len == 1) {
      byte_rank_[static_cast<unsigned char>(p[0])] = id;
    } else if (len == 2) {
      pair_rank_[static_cast<unsigned char>(p[0]) << 8 | static_cast<unsigned char>(p[1])] = id;
    } else {
      const uint64_t head = load_head(p, len);
      size_t i = hash(head, p, len) & mask_;
      while (slots_[i].id != kNoRank) i = (i + 1) & mask_;
      slots_[i] = Slot{head, static_cast<uint32_t>(len), id};
    }
  }
  for (unsigned b = 0; b < 256; ++b) {
    // Every byte must be a token or BPE could not spell arbitrary input.
    if (byte_rank_[b] == kNoRank) fail(gptoss_status_invalid_argument, "no token for byte {:#04x}", b);
  }
}

}  // namespace gptoss::tokenizer
