// Encoding and decoding with the real o200k_harmony vocabulary.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "libgptoss/common/error.hpp"
#include "real_tokenizer.hpp"
#include "support/paths.hpp"

using gptoss::Error;
using gptoss::Tokenizer;
using gptoss::test::real_tokenizer;
using Ids = std::vector<uint32_t>;

namespace {

gptoss_status status_of(auto&& f) {
  try {
    f();
    return gptoss_status_success;
  } catch (const Error& e) {
    return e.status();
  }
}

}  // namespace

TEST_CASE("ids from upstream tests and the shared cases", "[tokenizer]") {
  const Tokenizer& t = real_tokenizer();
  // openai-harmony's test_encode_allowed_special / test_encode_decode_roundtrip.
  CHECK(t.encode_ordinary("hello world") == Ids{24912, 2375});
  CHECK(t.encode_ordinary("<|start|>") == Ids{27, 91, 5236, 91, 29});
  CHECK(t.encode_with_specials("<|start|>") == Ids{200006});
  // First lines of the shared tokenizer cases (tiktoken 1.0.22).
  std::ifstream cases(gptoss::test::shared_dir() + "/conformance/tokenizer/cases.jsonl");
  std::string line;
  int checked = 0;
  while (checked < 25 && std::getline(cases, line)) {
    const auto c = nlohmann::json::parse(line);
    const std::string text = c.at("text").get<std::string>();
    const auto ids = c.at("ids").get<Ids>();
    INFO(text);
    if (c.at("mode") == "ordinary") {
      CHECK(t.encode_ordinary(text) == ids);
    } else {
      CHECK(t.encode_with_specials(text) == ids);
    }
    CHECK(t.decode(ids) == text);
    ++checked;
  }
  CHECK(checked == 25);
}

TEST_CASE("malformed UTF-8 encodes byte-exact and never fails", "[tokenizer]") {
  const Tokenizer& t = real_tokenizer();
  const std::vector<std::string> texts = {
      std::string("\xff"),
      std::string("abc\xe2\x82"),                 // truncated 3-byte sequence at the end
      std::string("\xc0\x80 overlong NUL"),
      std::string("\xed\xa0\x80 surrogate"),
      std::string("\x80\x80\x80 lone continuations"),
      std::string("emoji cut \xf0\x9f\x98 then text"),
      std::string("\xf5\xf6\xf7\xf8\xf9\xfa\xfb\xfc\xfd\xfe\xff"),
      std::string("caf\xc3\xa9 \xc3 caf\xc3\xa9", 12),
      std::string("nul\0in the middle", 17),
      std::string("<|start|>\xff<|end|>"),
  };
  for (const std::string& text : texts) {
    INFO(text);
    const Ids ordinary = t.encode_ordinary(text);
    CHECK(t.decode(ordinary) == text);
    const Ids special = t.encode_with_specials(text);
    CHECK(t.decode(special) == text);
  }
  // A lone invalid byte is its own single-byte token.
  const Ids ff = t.encode_ordinary("\xff");
  REQUIRE(ff.size() == 1);
  CHECK(t.token_bytes(ff[0]) == "\xff");
  // Valid text around an invalid byte is split there, as if the byte were a separator.
  const Ids around = t.encode_ordinary("hello\xffworld");
  CHECK(t.decode(around) == "hello\xffworld");
  CHECK(around.front() == t.encode_ordinary("hello").front());
}

TEST_CASE("special-token strings: plain text unless allowed", "[tokenizer]") {
  const Tokenizer& t = real_tokenizer();
  const std::string text = "<|start|>user<|message|>Hi<|end|>";
  const Ids with = t.encode_with_specials(text);
  REQUIRE(with.size() == 5);
  CHECK(with[0] == 200006);
  CHECK(with[2] == 200008);
  CHECK(with[4] == 200007);
  CHECK(Ids(with.begin() + 1, with.begin() + 2) == t.encode_ordinary("user"));
  const Ids plain = t.encode_ordinary(text);
  for (uint32_t id : plain) CHECK_FALSE(t.is_special(id));
  CHECK(t.decode(plain) == text);
  CHECK(t.decode(with) == text);

  // tiktoken's encode(): allowed ones become ids; the others are errors or plain text.
  const Ids only_start = t.encode(text, {"<|start|>"}, false);
  CHECK(only_start.front() == 200006);
  CHECK(t.decode(only_start) == text);
  CHECK(std::count(only_start.begin(), only_start.end(), 200008u) == 0);
  CHECK(status_of([&] { t.encode(text, {"<|start|>"}, true); }) ==
        gptoss_status_invalid_argument);
  CHECK(t.encode(text, {"<|start|>", "<|message|>", "<|end|>"}, true) == with);
  CHECK(t.encode(text, {}, false) == plain);
  CHECK(t.encode("no specials here", {}, true) == t.encode_ordinary("no specials here"));
  // Names that are not special tokens are ignored in `allowed`, as tiktoken does.
  CHECK(t.encode("<|nope|>", {"<|nope|>"}, true) == t.encode_ordinary("<|nope|>"));

  // Near misses stay text; a special right after a "<|" prefix is still found.
  CHECK(t.encode_with_specials("<|start|") == t.encode_ordinary("<|start|"));
  CHECK(t.encode_with_specials("<|START|>") == t.encode_ordinary("<|START|>"));
  const Ids nested = t.encode_with_specials("<|<|start|>");
  CHECK(nested.back() == 200006);
  CHECK(t.decode(nested) == "<|<|start|>");
}

TEST_CASE("special tokens: names, reserved range, bounds", "[tokenizer]") {
  const Tokenizer& t = real_tokenizer();
  CHECK(t.num_text_tokens() == 199998);
  CHECK(t.num_special_tokens() == 1090);
  CHECK(t.num_tokens() == 201088);
  const std::vector<std::pair<std::string, uint32_t>> named = {
      {"<|startoftext|>", 199998}, {"<|endoftext|>", 199999}, {"<|return|>", 200002},
      {"<|constrain|>", 200003},   {"<|channel|>", 200005},   {"<|start|>", 200006},
      {"<|end|>", 200007},         {"<|message|>", 200008},   {"<|call|>", 200012},
      {"<|endofprompt|>", 200018}};
  for (const auto& [name, id] : named) {
    CHECK(t.special_id(name) == id);
    CHECK(t.token_bytes(id) == name);
    CHECK(t.is_special(id));
  }
  for (uint32_t id : {200000u, 200001u, 200004u, 200009u, 200017u, 200019u, 200500u, 201087u}) {
    const std::string name = "<|reserved_" + std::to_string(id) + "|>";
    CHECK(t.special_id(name) == id);
    CHECK(t.token_bytes(id) == name);
    CHECK(t.encode_with_specials(name) == Ids{id});
  }
  CHECK_FALSE(t.special_id("<|reserved_200018|>"));  // 200018 is <|endofprompt|>
  CHECK_FALSE(t.special_id("<|reserved_201088|>"));  // one past the vocabulary
  CHECK_FALSE(t.special_id("<|reserved_199999|>"));
  CHECK_FALSE(t.special_id("hello"));
  CHECK_FALSE(t.is_special(199997));
  CHECK_FALSE(t.is_special(201088));
  CHECK(t.encode_with_specials("<|reserved_201088|>").size() > 1);

  CHECK(status_of([&] { t.token_bytes(201088); }) == gptoss_status_invalid_argument);
  CHECK(status_of([&] { t.token_bytes(UINT32_MAX); }) == gptoss_status_invalid_argument);
  const Ids bad = {24912, 201088};
  CHECK(status_of([&] { t.decode(bad); }) == gptoss_status_invalid_argument);
}

TEST_CASE("long pieces: runs of one class encode and round-trip", "[tokenizer]") {
  const Tokenizer& t = real_tokenizer();
  for (const std::string& text :
       {std::string(200000, 'a'), std::string(100000, ' ') + "x", std::string(50000, '\n'),
        std::string(30000, '!'), [] {
          std::string s;
          for (int i = 0; i < 20000; ++i) s += "\xe6\x97\xa5";  // 日, letters without breaks
          return s;
        }()}) {
    const Ids ids = t.encode_ordinary(text);
    CHECK(ids.size() < text.size());
    CHECK(t.decode(ids) == text);
  }
}

TEST_CASE("one tokenizer shared by threads gives identical ids", "[tokenizer]") {
  const Tokenizer& t = real_tokenizer();
  std::ifstream in(gptoss::test::shared_dir() + "/conformance/tokenizer/bench.txt",
                   std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.resize(std::min<size_t>(text.size(), 300000));
  REQUIRE(!text.empty());
  const Ids expected = t.encode_ordinary(text);
  constexpr int kThreads = 6;
  std::vector<Ids> results(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      // Different starting points so the threads fill the piece cache concurrently.
      const size_t cut = text.size() * static_cast<size_t>(i) / kThreads;
      (void)t.encode_ordinary(std::string_view(text).substr(cut));
      results[i] = t.encode_ordinary(text);
    });
  }
  for (auto& th : threads) th.join();
  for (int i = 0; i < kThreads; ++i) CHECK(results[i] == expected);
}
