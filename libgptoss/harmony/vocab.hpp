#pragma once
// Token lookups with openai-harmony's view of the vocabulary: besides the tokenizer's ids it
// registers <|reserved_201088|>, one past the 201,088-row embedding table. Harmony decoding
// accepts that id so that it matches the reference; the model can never sample it.
#include <cstdint>
#include <optional>
#include <string_view>

namespace gptoss {
class Tokenizer;
}

namespace gptoss::harmony {

inline constexpr uint32_t kHarmonyExtraReservedId = 201088;

// Bytes of one token (special tokens as their strings), or nullopt for an unknown id.
std::optional<std::string_view> harmony_token_bytes(const Tokenizer& tokenizer, uint32_t id);
bool harmony_is_special(const Tokenizer& tokenizer, uint32_t id);

}  // namespace gptoss::harmony
