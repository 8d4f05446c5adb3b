// gptoss_grammar_create_json_schema on arbitrary JSON Schemas, with the real tokenizer. Input:
// the schema text up to its first NUL byte; the bytes after it choose tokens to accept.
//
// Properties:
//  - success, or invalid_argument / unsupported_argument with a message, never internal;
//    *grammar_out untouched on failure;
//  - on success a constraint at the grammar's start fills a mask of exactly the vocabulary's
//    words (capacity protocol: too small -> buffer_too_small with the count) with at least one
//    token allowed (a grammar that compiled has a valid output);
//  - a few steps, each taking an allowed token the input chooses: accepting it succeeds; a
//    forbidden token is refused with invalid_argument and leaves the mask unchanged; the mask
//    is empty exactly when the constraint says it is finished, and then the text before the
//    end token is a JSON document;
//  - for a grammar whose shortest output is short: with max_tokens from that minimum to a few
//    more, a walk the input chooses finishes within the budget on a JSON document, and one
//    less than the minimum is refused with invalid_argument.
// Step costs may hit the matcher's documented ambiguity bound (insufficient_resources).
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/fuzz_support.hpp"

using namespace gptoss;

namespace {

// Schemas longer than this are skipped: compiling is linear in the schema but the token-trie
// walk of every lexeme state is not free under ASan + coverage, and a 64 KiB schema of wide
// enums can take tens of seconds per input, which libFuzzer reports as a timeout (30 s) that
// says nothing about correctness. The bounds themselves (enum text, DFA states, nesting) are
// reached well below 16 KiB.
constexpr size_t kMaxSchemaBytes = 16 * 1024;
// Accepted tokens per input: enough to enter strings, keys and nested values.
constexpr int kMaxSteps = 8;
constexpr size_t kVocabulary = 201088;
constexpr size_t kWords = GPTOSS_MASK_WORDS(kVocabulary);

// The mask, or nothing when the step hit the matcher's ambiguity bound.
std::vector<uint32_t> fill_mask(gptoss_constraint_t c) {
  size_t n = SIZE_MAX;
  uint32_t small[1];
  fuzz::check_status(gptoss_constraint_fill_mask(c, small, 1, &n), {gptoss_status_buffer_too_small},
                     "fill_mask with capacity 1");
  GPTOSS_FUZZ_CHECK(n == kWords, "fill_mask capacity count is not the vocabulary's words");
  std::vector<uint32_t> mask(kWords + 1, 0xA5A5A5A5u);
  gptoss_status st = gptoss_constraint_fill_mask(c, mask.data(), kWords, &n);
  fuzz::check_status(st, {gptoss_status_insufficient_resources}, "fill_mask");
  if (st != gptoss_status_success) return {};
  GPTOSS_FUZZ_CHECK(n == kWords && mask[kWords] == 0xA5A5A5A5u, "fill_mask wrote past capacity");
  mask.resize(kWords);
  return mask;
}

bool allowed(const std::vector<uint32_t>& mask, uint32_t t) { return (mask[t / 32] >> (t % 32)) & 1u; }

// The `k`-th allowed token (k modulo the count), or UINT32_MAX for an empty mask.
uint32_t nth_allowed(const std::vector<uint32_t>& mask, uint32_t k) {
  size_t count = 0;
  for (uint32_t w : mask) count += size_t(__builtin_popcount(w));
  if (count == 0) return UINT32_MAX;
  k %= uint32_t(count);
  for (uint32_t t = 0; t < kVocabulary; ++t)
    if (allowed(mask, t) && k-- == 0) return t;
  return UINT32_MAX;
}

uint32_t first_forbidden(const std::vector<uint32_t>& mask) {
  for (uint32_t t = 0; t < kVocabulary; ++t)
    if (!allowed(mask, t)) return t;
  return UINT32_MAX;
}

std::string decode(gptoss_tokenizer_t tok, const std::vector<uint32_t>& ids) {
  size_t n = 0;
  gptoss_status st = gptoss_tokenizer_decode_tokens(tok, ids.data(), ids.size(), nullptr, 0, &n);
  if (st == gptoss_status_success) return {};
  std::string text(n, '\0');
  fuzz::check_status(gptoss_tokenizer_decode_tokens(tok, ids.data(), ids.size(), text.data(), n, &n), {},
                     "decode accepted tokens");
  return text;
}

void walk(gptoss_tokenizer_t tok, gptoss_grammar_t g, fuzz::Bytes choices) {
  gptoss_constraint_t c = nullptr;
  fuzz::check_status(gptoss_constraint_create(g, nullptr, &c), {}, "constraint_create");
  std::vector<uint32_t> mask = fill_mask(c);
  if (!mask.empty()) GPTOSS_FUZZ_CHECK(nth_allowed(mask, 0) != UINT32_MAX, "no token allowed at the start");
  std::vector<uint32_t> accepted;
  for (int step = 0; step < kMaxSteps && !mask.empty() && !choices.empty(); ++step) {
    const uint32_t forbidden = first_forbidden(mask);
    if (forbidden != UINT32_MAX) {
      fuzz::check_status(gptoss_constraint_accept_token(c, forbidden),
                         {gptoss_status_invalid_argument, gptoss_status_insufficient_resources},
                         "accept a forbidden token");
      std::vector<uint32_t> again = fill_mask(c);
      GPTOSS_FUZZ_CHECK(again.empty() || again == mask, "a refused token changed the mask");
    }
    const uint32_t t = nth_allowed(mask, choices.take(3));
    if (t == UINT32_MAX) break;
    gptoss_status st = gptoss_constraint_accept_token(c, t);
    fuzz::check_status(st, {gptoss_status_insufficient_resources}, "accept an allowed token");
    if (st != gptoss_status_success) break;
    accepted.push_back(t);
    int32_t finished = -1;
    fuzz::check_status(gptoss_constraint_is_finished(c, &finished), {}, "is_finished");
    mask = fill_mask(c);
    if (mask.empty()) break;
    const bool empty = nth_allowed(mask, 0) == UINT32_MAX;
    GPTOSS_FUZZ_CHECK(empty == (finished == 1), "mask empty iff finished");
    if (finished == 1) {
      accepted.pop_back();  // the end token
      const std::string text = decode(tok, accepted);
      GPTOSS_FUZZ_CHECK(nlohmann::json::accept(text), "finished on text that is not JSON: " + text);
      break;
    }
  }
  gptoss_constraint_release(c);
}

// Short outputs only: each step scans the whole mask, and the budget's closing is the same
// machinery at any length.
constexpr int64_t kMaxBudgetedOutput = 32;

void walk_within_budget(gptoss_tokenizer_t tok, gptoss_grammar_t g, fuzz::Bytes choices) {
  gptoss_constraint_t c = nullptr;
  fuzz::check_status(gptoss_constraint_create(g, nullptr, &c), {}, "constraint_create");
  int64_t min = -2;
  fuzz::check_status(gptoss_constraint_min_tokens(c, &min), {}, "min_tokens");
  gptoss_constraint_release(c);
  GPTOSS_FUZZ_CHECK(min >= 1, "a compiled grammar without a finite shortest output");
  if (min > kMaxBudgetedOutput || choices.empty()) return;
  gptoss_constraint_options o;
  gptoss_constraint_options_init(&o);
  o.max_tokens = min - 1;
  c = nullptr;
  fuzz::check_status(gptoss_constraint_create(g, &o, &c), {gptoss_status_invalid_argument},
                     "constraint_create below the minimum");
  GPTOSS_FUZZ_CHECK(c == nullptr, "a budget below the minimum was accepted");
  o.max_tokens = min + int64_t(choices.take(1) % 4);
  fuzz::check_status(gptoss_constraint_create(g, &o, &c), {}, "constraint_create within budget");
  std::vector<uint32_t> accepted;
  int32_t finished = 0;
  while (!finished) {
    GPTOSS_FUZZ_CHECK(int64_t(accepted.size()) < o.max_tokens, "the budget ran out before the output finished");
    const std::vector<uint32_t> mask = fill_mask(c);
    if (mask.empty()) break;  // the ambiguity bound
    const uint32_t t = nth_allowed(mask, choices.empty() ? 0 : choices.take(3));
    GPTOSS_FUZZ_CHECK(t != UINT32_MAX, "the budget left no token allowed");
    gptoss_status st = gptoss_constraint_accept_token(c, t);
    fuzz::check_status(st, {gptoss_status_insufficient_resources}, "accept an allowed token within budget");
    if (st != gptoss_status_success) break;
    accepted.push_back(t);
    fuzz::check_status(gptoss_constraint_is_finished(c, &finished), {}, "is_finished");
  }
  if (finished) {
    accepted.pop_back();
    const std::string text = decode(tok, accepted);
    GPTOSS_FUZZ_CHECK(nlohmann::json::accept(text), "finished within budget on text that is not JSON: " + text);
  }
  gptoss_constraint_release(c);
}

}  // namespace

GPTOSS_FUZZ_INITIALIZE_WITH_REAL_TOKENIZER()

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gptoss_tokenizer_t tok = fuzz::real_tokenizer();
  const char* text = reinterpret_cast<const char*>(data);
  const size_t schema_size = strnlen(text, size);
  if (schema_size > kMaxSchemaBytes) return 0;
  const std::string schema(text, schema_size);
  const size_t rest = schema_size < size ? schema_size + 1 : size;

  gptoss_grammar_t sentinel = reinterpret_cast<gptoss_grammar_t>(uintptr_t{0x1});
  gptoss_grammar_t g = sentinel;
  gptoss_status st = gptoss_grammar_create_json_schema(tok, schema.c_str(), &g);
  fuzz::trace(st, "gptoss_grammar_create_json_schema");
  fuzz::check_status(st, {gptoss_status_invalid_argument, gptoss_status_unsupported_argument},
                     "gptoss_grammar_create_json_schema");
  if (st != gptoss_status_success) {
    GPTOSS_FUZZ_CHECK(g == sentinel, "grammar_out written on failure");
    return 0;
  }
  GPTOSS_FUZZ_CHECK(g != sentinel && g != nullptr, "success without a grammar");
  walk(tok, g, fuzz::Bytes(data + rest, size - rest));
  walk_within_budget(tok, g, fuzz::Bytes(data + rest, size - rest));
  gptoss_grammar_release(g);
  return 0;
}
