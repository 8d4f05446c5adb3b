// gptoss_tokenizer_encode / decode / decode_tokens on the real o200k_harmony tokenizer.
// Input: one flags byte (bit 0: GPTOSS_ENCODE_ALLOW_SPECIAL), then the text. The same bytes,
// read as little-endian uint32, are also decoded as token ids.
//
// Properties:
//  - encode follows the capacity protocol (capacity 0 and n-1: buffer_too_small with the
//    count; capacity n: success) and is deterministic (the second call hits the piece cache);
//  - every id is in the vocabulary, special only when specials are allowed, and there are no
//    more ids than bytes;
//  - decode_tokens(encode(x)) == x for every byte string, valid UTF-8 or not (invalid UTF-8 is
//    encoded byte by byte), and equals the concatenated single-token decodes;
//  - without "<|" in the text, allowing specials changes nothing;
//  - arbitrary ids: decode succeeds exactly for ids below 201088, else invalid_argument with
//    the outputs untouched; decode_tokens likewise for the whole list.
#include <cstring>
#include <string>
#include <vector>

#include "support/fuzz_support.hpp"

using namespace gptoss;

namespace {

constexpr uint32_t kVocab = 201088, kFirstSpecial = 199998;

std::vector<uint32_t> encode(gptoss_tokenizer_t tok, std::string_view text, uint32_t flags) {
  size_t n = SIZE_MAX;
  gptoss_status st = gptoss_tokenizer_encode(tok, text.data(), text.size(), flags, nullptr, 0, &n);
  fuzz::check_status(st, {gptoss_status_buffer_too_small}, "encode with capacity 0");
  GPTOSS_FUZZ_CHECK((st == gptoss_status_success) == (n == 0), "capacity 0 status vs count");
  std::vector<uint32_t> ids(n + 1, UINT32_MAX);
  size_t m = SIZE_MAX;
  if (n > 0) {
    st = gptoss_tokenizer_encode(tok, text.data(), text.size(), flags, ids.data(), n - 1, &m);
    GPTOSS_FUZZ_CHECK(st == gptoss_status_buffer_too_small && m == n, "capacity n-1");
    GPTOSS_FUZZ_CHECK(ids[0] == UINT32_MAX, "buffer_too_small wrote tokens");
  }
  st = gptoss_tokenizer_encode(tok, text.data(), text.size(), flags, ids.data(), n, &m);
  fuzz::check_status(st, {}, "encode with capacity n");
  GPTOSS_FUZZ_CHECK(m == n, "the count changed between calls");
  GPTOSS_FUZZ_CHECK(ids[n] == UINT32_MAX, "encode wrote past its capacity");
  ids.resize(n);
  return ids;
}

std::string decode(gptoss_tokenizer_t tok, const std::vector<uint32_t>& ids) {
  size_t n = SIZE_MAX;
  gptoss_status st = gptoss_tokenizer_decode_tokens(tok, ids.data(), ids.size(), nullptr, 0, &n);
  fuzz::check_status(st, {gptoss_status_buffer_too_small}, "decode_tokens with capacity 0");
  std::string text(n, '\0');
  size_t m = SIZE_MAX;
  st = gptoss_tokenizer_decode_tokens(tok, ids.data(), ids.size(), text.data(), n, &m);
  fuzz::check_status(st, {}, "decode_tokens");
  GPTOSS_FUZZ_CHECK(m == n, "decode_tokens count changed between calls");
  return text;
}

void check_arbitrary_ids(gptoss_tokenizer_t tok, fuzz::Bytes in) {
  std::vector<uint32_t> ids;
  bool all_valid = true;
  while (!in.empty()) {
    const uint32_t id = in.take(4);
    const void* ptr = &ids;
    size_t size = 12345;
    const gptoss_status st = gptoss_tokenizer_decode(tok, id, &ptr, &size);
    if (id < kVocab) {
      fuzz::check_status(st, {}, "decode of id " + std::to_string(id));
      GPTOSS_FUZZ_CHECK(size > 0 && ptr != nullptr, "token without bytes");
    } else {
      GPTOSS_FUZZ_CHECK(st == gptoss_status_invalid_argument, "decode of id " + std::to_string(id));
      GPTOSS_FUZZ_CHECK(ptr == &ids && size == 12345, "a failed decode wrote its outputs");
    }
    all_valid = all_valid && id < kVocab;
    ids.push_back(id);
  }
  char buf[8];
  size_t n = 777;
  const gptoss_status st = gptoss_tokenizer_decode_tokens(tok, ids.data(), ids.size(), buf, 0, &n);
  if (all_valid) {
    fuzz::check_status(st, {gptoss_status_buffer_too_small}, "decode_tokens of valid ids");
  } else {
    GPTOSS_FUZZ_CHECK(st == gptoss_status_invalid_argument && n == 777,
                      "decode_tokens with an id outside the vocabulary");
  }
}

}  // namespace

GPTOSS_FUZZ_INITIALIZE_WITH_REAL_TOKENIZER()

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gptoss_tokenizer_t tok = fuzz::real_tokenizer();
  fuzz::Bytes in(data, size);
  const uint32_t flags = in.take(1) & GPTOSS_ENCODE_ALLOW_SPECIAL;
  const std::string_view text = in.rest();

  const std::vector<uint32_t> ids = encode(tok, text, flags);
  GPTOSS_FUZZ_CHECK(ids.size() <= text.size(), "more tokens than bytes");
  for (uint32_t id : ids) {
    GPTOSS_FUZZ_CHECK(id < kVocab, "id outside the vocabulary");
    GPTOSS_FUZZ_CHECK(flags || id < kFirstSpecial, "special id without ALLOW_SPECIAL");
  }
  GPTOSS_FUZZ_CHECK(encode(tok, text, flags) == ids, "encoding the same text twice differs");
  const std::string back = decode(tok, ids);
  GPTOSS_FUZZ_CHECK(back == text, "decode(encode(x)) != x");

  std::string pieces;
  for (uint32_t id : ids) {
    const void* ptr = nullptr;
    size_t n = 0;
    fuzz::check_status(gptoss_tokenizer_decode(tok, id, &ptr, &n), {}, "decode");
    pieces.append(static_cast<const char*>(ptr), n);
  }
  GPTOSS_FUZZ_CHECK(pieces == back, "single-token decodes differ from decode_tokens");

  if (flags && text.find("<|") == std::string_view::npos)
    GPTOSS_FUZZ_CHECK(encode(tok, text, 0) == ids, "ALLOW_SPECIAL changed a text without \"<|\"");

  check_arbitrary_ids(tok, fuzz::Bytes(data, size));
  return 0;
}
