#pragma once
// The pre-tokenizer: a PCRE2 regex (UTF + UCP, JIT) that cuts text into pieces which BPE then
// encodes one by one. Compiled with PCRE2_MATCH_INVALID_UTF so that malformed UTF-8 never
// matches and never crashes: the bytes between matches are reported as gaps.
#include <cstddef>
#include <string>
#include <string_view>

struct pcre2_real_code_8;

namespace gptoss::tokenizer {

// o200k's split pattern, as in tiktoken and in gpt-oss's tokenizer.json (used for GGUF, which
// does not store it).
extern const char* const kO200kPattern;

// Rewrites \s and \S into Unicode's White_Space set, which is what tiktoken's Rust regex means
// by them; PCRE2 additionally counts U+180E. Throws gptoss::Error(unsupported_argument) for
// \S inside a character class.
std::string with_unicode_white_space(std::string_view pattern);

class PreSplit {
 public:
  // Throws gptoss::Error(invalid_argument) if the pattern does not compile.
  explicit PreSplit(const std::string& pattern);
  ~PreSplit();
  PreSplit(const PreSplit&) = delete;
  PreSplit& operator=(const PreSplit&) = delete;

  // Calls on_gap(begin, end) for byte ranges no match covers (only malformed UTF-8 with this
  // pattern) and on_piece(begin, end) for each match, in order, covering all of `text`.
  // Thread safe: match state lives in a thread-local buffer.
  template <typename OnPiece, typename OnGap>
  void split(std::string_view text, OnPiece&& on_piece, OnGap&& on_gap) const {
    size_t offset = 0;
    size_t begin = 0;
    size_t end = 0;
    while (offset < text.size() && next_match(text, offset, begin, end)) {
      if (begin > offset) on_gap(offset, begin);
      on_piece(begin, end);
      offset = end;
    }
    if (offset < text.size()) on_gap(offset, text.size());
  }

 private:
  // Finds the first match at or after `offset`; false if none. A match is never empty.
  bool next_match(std::string_view text, size_t offset, size_t& begin, size_t& end) const;

  pcre2_real_code_8* code_ = nullptr;
};

}  // namespace gptoss::tokenizer
