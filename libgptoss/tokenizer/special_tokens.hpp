#pragma once
// The o200k_harmony special tokens: ids 199998..201087. Ten have names of their own; every other
// id in 200000..201087 is <|reserved_N|>. This table is fixed whatever a tokenizer file lists
// (tokenizer.json stops at 200018, GGUF files call 200019+ "[PADn]").
#include <cstdint>
#include <string>

namespace gptoss::tokenizer {

inline constexpr uint32_t kFirstSpecialId = 199998;
inline constexpr uint32_t kEndSpecialId = 201088;  // one past the last id

// "<|start|>" for 200006, "<|reserved_200001|>" for 200001. Requires
// kFirstSpecialId <= id < kEndSpecialId.
std::string special_token_name(uint32_t id);

}  // namespace gptoss::tokenizer
