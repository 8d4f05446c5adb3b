#define PCRE2_CODE_UNIT_WIDTH 8
#include "libgptoss/tokenizer/pre_split.hpp"

#include <pcre2.h>

#include "libgptoss/common/error.hpp"

namespace gptoss::tokenizer {

const char* const kO200kPattern =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

namespace {

// Unicode White_Space, as a character-class body.
constexpr std::string_view kWhiteSpaceBody =
    "\\x{9}-\\x{d}\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}"
    "\\x{205f}\\x{3000}";

// Match state per thread: PCRE2 match data cannot be shared between concurrent matches, and
// allocating it per call would cost more than matching a short text.
struct ThreadMatchState {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  // Long runs of one class (a megabyte of spaces) need more than the default 32 KiB JIT stack.
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, 64 * 1024 * 1024, nullptr);
  ThreadMatchState() {
    if (data == nullptr || context == nullptr || jit_stack == nullptr) throw std::bad_alloc();
    pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~ThreadMatchState() {
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
  ThreadMatchState(const ThreadMatchState&) = delete;
  ThreadMatchState& operator=(const ThreadMatchState&) = delete;
};

ThreadMatchState& thread_match_state() {
  thread_local ThreadMatchState state;
  return state;
}

}  // namespace

std::string with_unicode_white_space(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 256);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        if (in_class) {
          out += kWhiteSpaceBody;
        } else {
          out += '[';
          out += kWhiteSpaceBody;
          out += ']';
        }
      } else if (e == 'S') {
        if (in_class) {
          fail(gptoss_status_unsupported_argument,
               "split pattern uses \\S inside a character class, which is not supported");
        }
        out += "[^";
        out += kWhiteSpaceBody;
        out += ']';
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal, not the end of the class.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

PreSplit::PreSplit(const std::string& pattern) {
  const std::string translated = with_unicode_white_space(pattern);
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                        PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &error_offset,
                        nullptr);
  if (code_ == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    fail(gptoss_status_invalid_argument, "split pattern does not compile at offset {}: {}",
         error_offset, reinterpret_cast<const char*>(message));
  }
  // Without JIT (unsupported CPU) pcre2_match falls back to the interpreter: slower, same result.
  (void)pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);
}

PreSplit::~PreSplit() { pcre2_code_free(code_); }

bool PreSplit::next_match(std::string_view text, size_t offset, size_t& begin,
                          size_t& end) const {
  ThreadMatchState& state = thread_match_state();
  // NOTEMPTY: a pattern that could match the empty string must not stall the split.
  const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(),
                             offset, PCRE2_NOTEMPTY, state.data, state.context);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(rc, message, sizeof message);
    fail(gptoss_status_insufficient_resources, "pre-split regex failed at byte {}: {}", offset,
         reinterpret_cast<const char*>(message));
  }
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(state.data);
  begin = ov[0];
  end = ov[1];
  return true;
}

}  // namespace gptoss::tokenizer
