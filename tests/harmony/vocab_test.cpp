// Harmony's view of the vocabulary: the tokenizer's ids plus the extra <|reserved_201088|>
// that openai-harmony's encoding adds past the tokenizer's last id.
#include <catch2/catch.hpp>

#include "harmony/harmony_test_support.hpp"
#include "libgptoss/harmony/vocab.hpp"

using namespace gptoss::harmony;

TEST_CASE("vocab: specials, the extra reserved id, unknown ids", "[harmony]") {
  const auto& tok = *gptoss::test::harmony_tokenizer();
  CHECK(harmony_token_bytes(tok, 200006) == std::optional<std::string_view>("<|start|>"));
  CHECK(harmony_token_bytes(tok, 200014) == std::optional<std::string_view>("<|reserved_200014|>"));
  CHECK(harmony_token_bytes(tok, 201088) == std::optional<std::string_view>("<|reserved_201088|>"));
  CHECK_FALSE(harmony_token_bytes(tok, 201089));
  CHECK_FALSE(harmony_token_bytes(tok, 0xFFFFFFFFu));
  CHECK(harmony_is_special(tok, 200006));
  CHECK(harmony_is_special(tok, 201088));
  CHECK_FALSE(harmony_is_special(tok, 24912));
  CHECK_FALSE(harmony_is_special(tok, 201089));
}
