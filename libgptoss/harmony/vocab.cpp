#include "libgptoss/harmony/vocab.hpp"

#include "libgptoss/common/error.hpp"
#include "libgptoss/tokenizer/tokenizer.hpp"

namespace gptoss::harmony {

std::optional<std::string_view> harmony_token_bytes(const Tokenizer& tokenizer, uint32_t id) {
  if (id < tokenizer.num_tokens()) {
    try {
      return tokenizer.token_bytes(id);
    } catch (const Error&) {
      return std::nullopt;  // a hole in a sparse vocabulary
    }
  }
  if (id == kHarmonyExtraReservedId) return std::string_view("<|reserved_201088|>");
  return std::nullopt;
}

bool harmony_is_special(const Tokenizer& tokenizer, uint32_t id) {
  return tokenizer.is_special(id) || (id == kHarmonyExtraReservedId && id >= tokenizer.num_tokens());
}

}  // namespace gptoss::harmony
