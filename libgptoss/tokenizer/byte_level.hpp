#pragma once
// GPT-2's byte-level alphabet: tokenizer.json and GGUF vocabularies spell each byte of a token
// as one printable code point (bytes 0x21..0x7E, 0xA1..0xAC, 0xAE..0xFF as themselves, the other
// 68 bytes as U+0100..U+0143 in byte order). These helpers undo that spelling.
#include <optional>
#include <string>
#include <string_view>

namespace gptoss::tokenizer {

// Appends the raw bytes spelled by `encoded` (UTF-8 of byte-level code points) to `out`.
// Returns false (leaving `out` partly written) if a code point is outside the alphabet or the
// UTF-8 is malformed.
bool append_byte_level_decoded(std::string_view encoded, std::string& out);

// The byte-level spelling of raw bytes (used by tests and tools that build GGUF vocabularies).
std::string byte_level_encode(std::string_view bytes);

}  // namespace gptoss::tokenizer
