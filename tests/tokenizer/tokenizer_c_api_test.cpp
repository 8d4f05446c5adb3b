// The gptoss_tokenizer_* C API: capacity protocol, special tokens, counts, errors.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "gptoss.h"
#include "support/paths.hpp"

namespace {

struct Handle {
  gptoss_tokenizer_t t = nullptr;
  Handle() {
    REQUIRE(gptoss_tokenizer_create_from_file(gptoss::test::tokenizer_json().c_str(), &t) ==
            gptoss_status_success);
    REQUIRE(t != nullptr);
  }
  ~Handle() { gptoss_tokenizer_release(t); }
};

gptoss_tokenizer_t shared_handle() {
  static Handle handle;
  return handle.t;
}

}  // namespace

TEST_CASE("C API encode: capacity protocol", "[tokenizer]") {
  gptoss_tokenizer_t t = shared_handle();
  const std::string text = "hello world";  // 2 tokens: 24912, 2375
  size_t n = 12345;
  CHECK(gptoss_tokenizer_encode(t, text.data(), text.size(), 0, nullptr, 0, &n) ==
        gptoss_status_buffer_too_small);
  CHECK(n == 2);
  uint32_t one[1] = {777};
  CHECK(gptoss_tokenizer_encode(t, text.data(), text.size(), 0, one, 1, &n) ==
        gptoss_status_buffer_too_small);
  CHECK(n == 2);
  CHECK(one[0] == 777);  // nothing written on buffer_too_small
  uint32_t ids[4] = {0, 0, 0, 0};
  CHECK(gptoss_tokenizer_encode(t, text.data(), text.size(), 0, ids, 4, &n) ==
        gptoss_status_success);
  CHECK(n == 2);
  CHECK(ids[0] == 24912);
  CHECK(ids[1] == 2375);
  CHECK(ids[2] == 0);
  // Empty text: zero tokens, NULL text allowed.
  CHECK(gptoss_tokenizer_encode(t, nullptr, 0, 0, nullptr, 0, &n) == gptoss_status_success);
  CHECK(n == 0);
  // Bad arguments.
  CHECK(gptoss_tokenizer_encode(t, nullptr, 3, 0, ids, 4, &n) == gptoss_status_invalid_argument);
  CHECK(gptoss_tokenizer_encode(t, "abc", 3, 0, nullptr, 4, &n) ==
        gptoss_status_invalid_argument);
  CHECK(gptoss_tokenizer_encode(t, "abc", 3, 0, ids, 4, nullptr) ==
        gptoss_status_invalid_argument);
  CHECK(gptoss_tokenizer_encode(t, "abc", 3, 0x80, ids, 4, &n) ==
        gptoss_status_invalid_argument);
}

TEST_CASE("C API encode: specials by flag, embedded NUL", "[tokenizer]") {
  gptoss_tokenizer_t t = shared_handle();
  const std::string text = "<|start|>";
  std::vector<uint32_t> ids(16);
  size_t n = 0;
  REQUIRE(gptoss_tokenizer_encode(t, text.data(), text.size(), GPTOSS_ENCODE_ALLOW_SPECIAL,
                                  ids.data(), ids.size(), &n) == gptoss_status_success);
  CHECK(std::vector<uint32_t>(ids.begin(), ids.begin() + n) == std::vector<uint32_t>{200006});
  REQUIRE(gptoss_tokenizer_encode(t, text.data(), text.size(), 0, ids.data(), ids.size(), &n) ==
          gptoss_status_success);
  CHECK(std::vector<uint32_t>(ids.begin(), ids.begin() + n) ==
        std::vector<uint32_t>{27, 91, 5236, 91, 29});

  const std::string with_nul("a\0b\xff", 4);
  REQUIRE(gptoss_tokenizer_encode(t, with_nul.data(), with_nul.size(), 0, ids.data(), ids.size(),
                                  &n) == gptoss_status_success);
  char out[16];
  size_t size = 0;
  REQUIRE(gptoss_tokenizer_decode_tokens(t, ids.data(), n, out, sizeof out, &size) ==
          gptoss_status_success);
  CHECK(std::string(out, size) == with_nul);
}

TEST_CASE("C API decode and decode_tokens", "[tokenizer]") {
  gptoss_tokenizer_t t = shared_handle();
  const void* ptr = nullptr;
  size_t size = 0;
  REQUIRE(gptoss_tokenizer_decode(t, 24912, &ptr, &size) == gptoss_status_success);
  CHECK(std::string(static_cast<const char*>(ptr), size) == "hello");
  REQUIRE(gptoss_tokenizer_decode(t, 200014, &ptr, &size) == gptoss_status_success);
  CHECK(std::string(static_cast<const char*>(ptr), size) == "<|reserved_200014|>");
  CHECK(gptoss_tokenizer_decode(t, 201088, &ptr, &size) == gptoss_status_invalid_argument);
  CHECK(gptoss_tokenizer_decode(t, 0, nullptr, &size) == gptoss_status_invalid_argument);

  const uint32_t ids[] = {200006, 24912, 2375};
  const std::string expected = "<|start|>hello world";
  size_t n = 0;
  CHECK(gptoss_tokenizer_decode_tokens(t, ids, 3, nullptr, 0, &n) ==
        gptoss_status_buffer_too_small);
  CHECK(n == expected.size());
  std::vector<char> small(n - 1, 'x');
  CHECK(gptoss_tokenizer_decode_tokens(t, ids, 3, small.data(), small.size(), &n) ==
        gptoss_status_buffer_too_small);
  CHECK(n == expected.size());
  CHECK(small[0] == 'x');
  std::vector<char> exact(n);
  REQUIRE(gptoss_tokenizer_decode_tokens(t, ids, 3, exact.data(), exact.size(), &n) ==
          gptoss_status_success);
  CHECK(std::string(exact.data(), n) == expected);
  CHECK(gptoss_tokenizer_decode_tokens(t, nullptr, 0, nullptr, 0, &n) == gptoss_status_success);
  CHECK(n == 0);
  const uint32_t bad[] = {24912, 300000};
  CHECK(gptoss_tokenizer_decode_tokens(t, bad, 2, exact.data(), exact.size(), &n) ==
        gptoss_status_invalid_argument);
  CHECK(gptoss_tokenizer_decode_tokens(t, nullptr, 2, exact.data(), exact.size(), &n) ==
        gptoss_status_invalid_argument);
}

TEST_CASE("C API special tokens and counts", "[tokenizer]") {
  gptoss_tokenizer_t t = shared_handle();
  const std::vector<std::pair<gptoss_special_token, uint32_t>> expected = {
      {gptoss_special_token_return, 200002},      {gptoss_special_token_start, 200006},
      {gptoss_special_token_message, 200008},     {gptoss_special_token_end, 200007},
      {gptoss_special_token_constrain, 200003},   {gptoss_special_token_channel, 200005},
      {gptoss_special_token_call, 200012},        {gptoss_special_token_startoftext, 199998},
      {gptoss_special_token_endoftext, 199999},   {gptoss_special_token_endofprompt, 200018}};
  for (const auto& [type, id] : expected) {
    uint32_t got = 0;
    CHECK(gptoss_tokenizer_get_special_token_id(t, type, &got) == gptoss_status_success);
    CHECK(got == id);
  }
  for (gptoss_special_token type :
       {gptoss_special_token_invalid, gptoss_special_token_refusal,
        gptoss_special_token_untrusted, gptoss_special_token_end_untrusted,
        static_cast<gptoss_special_token>(99)}) {
    uint32_t got = 5;
    CHECK(gptoss_tokenizer_get_special_token_id(t, type, &got) == gptoss_status_invalid_argument);
    CHECK(got == 5);
  }
  uint32_t id = 0;
  CHECK(gptoss_tokenizer_lookup_special(t, "<|reserved_200100|>", &id) == gptoss_status_success);
  CHECK(id == 200100);
  CHECK(gptoss_tokenizer_lookup_special(t, "<|call|>", &id) == gptoss_status_success);
  CHECK(id == 200012);
  CHECK(gptoss_tokenizer_lookup_special(t, "<|reserved_201088|>", &id) ==
        gptoss_status_invalid_argument);
  CHECK(gptoss_tokenizer_lookup_special(t, "hello", &id) == gptoss_status_invalid_argument);
  CHECK(gptoss_tokenizer_lookup_special(t, nullptr, &id) == gptoss_status_invalid_argument);

  size_t n = 0;
  CHECK(gptoss_tokenizer_get_num_text_tokens(t, &n) == gptoss_status_success);
  CHECK(n == 199998);
  CHECK(gptoss_tokenizer_get_num_special_tokens(t, &n) == gptoss_status_success);
  CHECK(n == 1090);
  CHECK(gptoss_tokenizer_get_num_tokens(t, &n) == gptoss_status_success);
  CHECK(n == 201088);
  CHECK(gptoss_tokenizer_get_num_tokens(t, nullptr) == gptoss_status_invalid_argument);
}

TEST_CASE("C API retain/release keep the tokenizer alive", "[tokenizer]") {
  gptoss_tokenizer_t t = nullptr;
  REQUIRE(gptoss_tokenizer_create_from_file(gptoss::test::tokenizer_json().c_str(), &t) ==
          gptoss_status_success);
  CHECK(gptoss_tokenizer_retain(t) == gptoss_status_success);
  CHECK(gptoss_tokenizer_release(t) == gptoss_status_success);
  size_t n = 0;
  CHECK(gptoss_tokenizer_get_num_tokens(t, &n) == gptoss_status_success);  // still alive
  CHECK(gptoss_tokenizer_release(t) == gptoss_status_success);
}
