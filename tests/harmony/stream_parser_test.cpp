// The streaming parser: header variants models produce, strict errors, tolerant recovery
// (never throws, never loses text), unknown token ids and the per-token deltas.
#include <catch2/catch.hpp>

#include "harmony/harmony_test_support.hpp"
#include "libgptoss/common/error.hpp"
#include "libgptoss/harmony/utf8.hpp"

using namespace gptoss;
using namespace gptoss::harmony;
using gptoss::test::harmony_tokens;
using gptoss::test::parse_all;
using gptoss::test::text_of;

namespace {
constexpr bool kStrict = true, kTolerant = false;
const std::string kFFFD(kReplacementChar);

// Both modes must give the same single message.
Message parse_one_both(const std::string& text) {
  auto strict = parse_all(harmony_tokens(text), std::nullopt, kStrict);
  auto tolerant = parse_all(harmony_tokens(text), std::nullopt, kTolerant);
  REQUIRE(strict.size() == 1);
  REQUIRE(tolerant.size() == 1);
  CHECK(text_of(strict[0]) == text_of(tolerant[0]));
  CHECK(strict[0].recipient == tolerant[0].recipient);
  CHECK(strict[0].content_type == tolerant[0].content_type);
  return strict[0];
}

void require_strict_error(const std::string& text, std::optional<Role> role = std::nullopt) {
  CHECK_THROWS_AS(parse_all(harmony_tokens(text), role, kStrict), Error);
}
}  // namespace

TEST_CASE("parser: recipient in the role part or after the channel", "[harmony]") {
  Message a = parse_one_both("<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{}<|call|>");
  CHECK(a.recipient == "functions.get_weather");
  CHECK(a.channel == "commentary");
  CHECK(a.content_type == "json");
  Message b = parse_one_both("<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{}<|call|>");
  CHECK(b.recipient == "functions.get_weather");
  CHECK(b.content_type == "<|constrain|>json");
}

TEST_CASE("parser: tool calls on the analysis channel", "[harmony]") {
  Message m = parse_one_both("<|start|>assistant to=python<|channel|>analysis code<|message|>print(1)<|call|>");
  CHECK(m.role == Role::assistant);
  CHECK(m.recipient == "python");
  CHECK(m.channel == "analysis");
  CHECK(m.content_type == "code");
  CHECK(text_of(m) == "print(1)");
}

TEST_CASE("parser: <|constrain|> glued to the recipient; a glued word is not split", "[harmony]") {
  Message m = parse_one_both("<|start|>assistant<|channel|>commentary to=functions.f<|constrain|>json<|message|>{}<|call|>");
  CHECK(m.recipient == "functions.f");
  CHECK(m.content_type == "<|constrain|>json");
  // "functions.fjson" could be a tool's real name: it stays the recipient, as in the reference.
  Message g = parse_one_both("<|start|>assistant<|channel|>commentary to=functions.fjson<|message|>{}<|call|>");
  CHECK(g.recipient == "functions.fjson");
  CHECK_FALSE(g.content_type);
}

TEST_CASE("parser: content type before the recipient (tolerant only)", "[harmony]") {
  const std::string text = "<|start|>assistant<|channel|>commentary<|constrain|>json to=functions.f<|message|>{}<|call|>";
  require_strict_error(text);
  auto ms = parse_all(harmony_tokens(text), std::nullopt, kTolerant);
  REQUIRE(ms.size() == 1);
  CHECK(ms[0].recipient == "functions.f");
  CHECK(ms[0].content_type == "<|constrain|>json");
  CHECK(text_of(ms[0]) == "{}");
  // "<|constrain|> json" with a space in between.
  ms = parse_all(harmony_tokens("<|start|>assistant to=functions.f<|channel|>commentary <|constrain|> json<|message|>{}<|call|>"),
                 std::nullopt, kTolerant);
  REQUIRE(ms.size() == 1);
  CHECK(ms[0].recipient == "functions.f");
  CHECK(ms[0].content_type == "<|constrain|>json");
}

TEST_CASE("parser: stop tokens close messages", "[harmony]") {
  for (const char* stop : {"<|end|>", "<|return|>", "<|call|>"}) {
    auto ms = parse_all(harmony_tokens(std::string("<|channel|>final<|message|>hi") + stop), Role::assistant, kStrict,
                        /*eos=*/false);
    REQUIRE(ms.size() == 1);
    CHECK(text_of(ms[0]) == "hi");
  }
}

TEST_CASE("parser: header words the reference cannot place start the content (tolerant)", "[harmony]") {
  const std::string text = "<|start|>assistant<|channel|>analysis I think so<|message|> more<|end|>";
  require_strict_error(text);
  auto ms = parse_all(harmony_tokens(text), std::nullopt, kTolerant);
  REQUIRE(ms.size() == 1);
  CHECK(ms[0].channel == "analysis");
  CHECK(text_of(ms[0]) == "I think so more");
}

TEST_CASE("parser: a missing <|message|> in a later header keeps its text (tolerant)", "[harmony]") {
  const std::string text = "<|start|>assistant<|channel|>final The answer is 4<|end|>";
  require_strict_error(text);
  auto ms = parse_all(harmony_tokens(text), std::nullopt, kTolerant);
  REQUIRE(ms.size() == 1);
  CHECK(ms[0].channel == "final");
  CHECK(text_of(ms[0]) == "The answer is 4");
  // A header that holds nothing but the role yields no message.
  CHECK(parse_all(harmony_tokens("<|start|>assistant<|end|>"), std::nullopt, kTolerant).empty());
}

TEST_CASE("parser: a missing <|start|> between messages", "[harmony]") {
  const std::string text = "<|channel|>analysis<|message|>x<|end|><|channel|>final<|message|>y<|return|><|end|>";
  require_strict_error(text, Role::assistant);
  auto ms = parse_all(harmony_tokens(text), Role::assistant, kTolerant);
  REQUIRE(ms.size() == 2);
  CHECK(ms[1].role == Role::assistant);
  CHECK(ms[1].channel == "final");
  CHECK(text_of(ms[1]) == "y");
}

TEST_CASE("parser: a missing <|end|> before <|start|>", "[harmony]") {
  const std::string text = "<|start|>assistant<|channel|>analysis<|message|>x<|start|>assistant<|channel|>final<|message|>y<|end|>";
  auto tolerant = parse_all(harmony_tokens(text), std::nullopt, kTolerant);
  REQUIRE(tolerant.size() == 2);
  CHECK(text_of(tolerant[0]) == "x");
  CHECK(text_of(tolerant[1]) == "y");
  // Strict mode follows the reference: the rest is content of the first message.
  auto strict = parse_all(harmony_tokens(text), std::nullopt, kStrict);
  REQUIRE(strict.size() == 1);
  CHECK(text_of(strict[0]) == "x<|start|>assistant<|channel|>final<|message|>y");
}

TEST_CASE("parser: end of stream inside a header", "[harmony]") {
  const std::string text = "<|start|>assistant<|channel|>final partial";
  require_strict_error(text);
  auto ms = parse_all(harmony_tokens(text), std::nullopt, kTolerant);
  REQUIRE(ms.size() == 1);
  CHECK(text_of(ms[0]) == "partial");
  // End of stream between messages is fine in both modes.
  CHECK(parse_all(harmony_tokens("<|start|>user<|message|>a<|end|>"), std::nullopt, kStrict).size() == 1);
}

TEST_CASE("parser: strict errors for malformed headers", "[harmony]") {
  require_strict_error("<|start|><|message|>x<|end|>");                  // no role
  require_strict_error("<|start|>robot<|message|>x<|end|>");             // unknown single word
  require_strict_error("<|start|>assistant<|channel|> <|message|>x<|end|>");  // empty channel
  require_strict_error("hello", std::nullopt);                            // no <|start|>
  // Tolerant mode reads them all.
  for (const char* t : {"<|start|><|message|>x<|end|>", "<|start|>robot<|message|>x<|end|>",
                        "<|start|>assistant<|channel|> <|message|>x<|end|>"}) {
    auto ms = parse_all(harmony_tokens(t), std::nullopt, kTolerant);
    REQUIRE(ms.size() == 1);
    CHECK(text_of(ms[0]) == "x");
  }
  auto ms = parse_all(harmony_tokens("hello"), std::nullopt, kTolerant);
  REQUIRE(ms.size() == 1);
  CHECK(text_of(ms[0]) == "hello");
}

TEST_CASE("parser: an unknown tool author is a tool message", "[harmony]") {
  Message m = parse_one_both("<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>20C<|end|>");
  CHECK(m.role == Role::tool);
  CHECK(m.name == "functions.get_weather");
  CHECK(m.recipient == "assistant");
}

TEST_CASE("parser: unknown token ids", "[harmony]") {
  auto tok = test::harmony_tokenizer();
  auto head = harmony_tokens("<|start|>assistant<|message|>a");
  auto tail = harmony_tokens("b<|end|>");
  const uint32_t bad = 0xFFFFFFFFu;
  for (bool strict : {kStrict, kTolerant}) {
    // In content: one U+FFFD per run of unknown ids, and the text after it is kept.
    auto tokens = head;
    tokens.push_back(bad);
    tokens.push_back(bad - 1);
    tokens.insert(tokens.end(), tail.begin(), tail.end());
    auto ms = parse_all(tokens, std::nullopt, strict);
    REQUIRE(ms.size() == 1);
    CHECK(text_of(ms[0]) == "a" + kFFFD + "b");
  }
  // In a header: strict fails, tolerant reads it as U+FFFD.
  auto tokens = harmony_tokens("<|start|>assistant<|channel|>final");
  tokens.push_back(bad);
  auto rest = harmony_tokens("<|message|>hi<|end|>");
  tokens.insert(tokens.end(), rest.begin(), rest.end());
  CHECK_THROWS_AS(parse_all(tokens, std::nullopt, kStrict), Error);
  auto ms = parse_all(tokens, std::nullopt, kTolerant);
  REQUIRE(ms.size() == 1);
  CHECK(text_of(ms[0]) == "hi");
  // Between messages: tolerant keeps it as text.
  ms = parse_all({bad}, std::nullopt, kTolerant);
  REQUIRE(ms.size() == 1);
  CHECK(text_of(ms[0]) == kFFFD);
}

// Caught by the harmony_parser fuzz harness's oracle (tests/fuzz/corpus/harmony_parser/
// regress-reordered-text): bytes still waiting when an unknown id came were written after its
// U+FFFD at the end of the message, so text changed places.
TEST_CASE("parser: text waiting before unknown ids keeps its place at the end", "[harmony]") {
  // Token 78747 is the bytes "\x8a" "pp": a repair (U+FFFD) for the stray continuation byte,
  // then "pp" waits for the next token (one repair per token).
  const uint32_t stray_then_pp = 78747;
  REQUIRE(test::harmony_tokenizer()->token_bytes(stray_then_pp) == "\x8app");
  for (bool strict : {kStrict, kTolerant}) {
    auto tokens = harmony_tokens("<|start|>assistant<|message|>");
    tokens.push_back(stray_then_pp);
    tokens.push_back(0xFFFFFFF0u);
    auto closed = tokens;
    closed.push_back(harmony_tokens("<|end|>").at(0));
    for (const auto& [stream, eos] : {std::pair{tokens, true}, std::pair{closed, false}}) {
      auto ms = parse_all(stream, std::nullopt, strict, eos);
      REQUIRE(ms.size() == 1);
      CHECK(text_of(ms[0]) == kFFFD + "pp" + kFFFD);
    }
  }
}

TEST_CASE("parser: deltas and current content per token", "[harmony]") {
  StreamParser p(test::harmony_tokenizer(), Role::assistant, kStrict);
  for (uint32_t t : harmony_tokens("<|channel|>final<|message|>")) p.process(t);
  CHECK(p.current_role() == Role::assistant);
  REQUIRE(p.current_header());
  CHECK(p.current_header()->channel == "final");
  CHECK_FALSE(p.last_content_delta());
  std::string all;
  for (uint32_t t : harmony_tokens("Hello, world")) {
    p.process(t);
    REQUIRE(p.last_content_delta());
    all += *p.last_content_delta();
    CHECK(p.current_content() == all);
  }
  CHECK(all == "Hello, world");
  p.process(*test::harmony_tokenizer()->special_id("<|return|>"));
  CHECK_FALSE(p.last_content_delta());
  CHECK(p.current_content().empty());
  CHECK_FALSE(p.current_header());
  REQUIRE(p.messages().size() == 1);
}

TEST_CASE("parser: after a strict error every call fails with invalid_state", "[harmony]") {
  StreamParser p(test::harmony_tokenizer(), std::nullopt, kStrict);
  try {
    p.process(harmony_tokens("x")[0]);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.status() == gptoss_status_invalid_argument);
  }
  try {
    p.process(*test::harmony_tokenizer()->special_id("<|start|>"));
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.status() == gptoss_status_invalid_state);
  }
}

TEST_CASE("parser: tolerant mode never throws on arbitrary token streams", "[harmony]") {
  auto tok = test::harmony_tokenizer();
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return uint32_t(state >> 33);
  };
  // Mostly Harmony specials and a few text / unknown ids, so every state is reached.
  const std::vector<uint32_t> specials{200002, 200003, 200005, 200006, 200007, 200008, 200012};
  for (int run = 0; run < 200; ++run) {
    StreamParser p(tok, run % 2 ? std::optional<Role>(Role::assistant) : std::nullopt, kTolerant);
    for (int i = 0; i < 64; ++i) {
      uint32_t r = next();
      uint32_t t = r % 3 == 0 ? specials[r % specials.size()] : r % 7 == 0 ? 300000 + r % 5 : r % 200000;
      REQUIRE_NOTHROW(p.process(t));
    }
    REQUIRE_NOTHROW(p.process_eos());
    for (const Message& m : p.messages()) CHECK(is_valid_utf8(text_of(m)));
  }
}
