#include "libgptoss/tokenizer/special_tokens.hpp"

#include <fmt/core.h>

namespace gptoss::tokenizer {

std::string special_token_name(uint32_t id) {
  switch (id) {
    case 199998: return "<|startoftext|>";
    case 199999: return "<|endoftext|>";
    case 200002: return "<|return|>";
    case 200003: return "<|constrain|>";
    case 200005: return "<|channel|>";
    case 200006: return "<|start|>";
    case 200007: return "<|end|>";
    case 200008: return "<|message|>";
    case 200012: return "<|call|>";
    case 200018: return "<|endofprompt|>";
    default: return fmt::format("<|reserved_{}|>", id);
  }
}

}  // namespace gptoss::tokenizer
