// tokenizer.json files through gptoss_tokenizer_create_from_file. Input: the file's bytes.
//
// Properties: never a crash; a file that is not a complete o200k_harmony tokenizer fails with
// io and a message naming the problem (the header's contract), never internal, leaving
// *tokenizer_out untouched. A loadable file lists 199,998 ranked tokens (about 2 MB), beyond a
// fuzz input, so what is explored here is the streaming JSON reader and every check before
// the vocabulary is complete; a file that does load must encode and decode one text back.
#include "support/fuzz_support.hpp"

using namespace gptoss;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ScratchFile file;
  file.write(data, size);

  gptoss_tokenizer_t sentinel = reinterpret_cast<gptoss_tokenizer_t>(uintptr_t{0x5eed});
  gptoss_tokenizer_t tok = sentinel;
  const gptoss_status st = gptoss_tokenizer_create_from_file(file.path().c_str(), &tok);
  fuzz::check_status(st, {gptoss_status_io}, "gptoss_tokenizer_create_from_file");
  if (st != gptoss_status_success) {
    GPTOSS_FUZZ_CHECK(tok == sentinel, "a failed create wrote *tokenizer_out");
    return 0;
  }
  const char text[] = "fuzz <|start|> \xff";
  uint32_t ids[64];
  size_t n = 0;
  fuzz::check_status(gptoss_tokenizer_encode(tok, text, sizeof text - 1, 0, ids, 64, &n), {},
                     "gptoss_tokenizer_encode");
  char back[64];
  size_t m = 0;
  fuzz::check_status(gptoss_tokenizer_decode_tokens(tok, ids, n, back, sizeof back, &m), {},
                     "gptoss_tokenizer_decode_tokens");
  GPTOSS_FUZZ_CHECK(std::string_view(back, m) == std::string_view(text, sizeof text - 1),
                    "a loaded tokenizer does not round-trip");
  gptoss_tokenizer_release(tok);
  return 0;
}
