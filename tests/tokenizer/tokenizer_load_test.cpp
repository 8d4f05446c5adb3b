// Loading: tokenizer.json errors (C++ and C API) and GGUF-style vocabularies.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gptoss.h"
#include "libgptoss/common/error.hpp"
#include "libgptoss/tokenizer/byte_level.hpp"
#include "real_tokenizer.hpp"
#include "support/paths.hpp"

using gptoss::Error;
using gptoss::Tokenizer;

namespace {

std::string write_temp(const std::string& name, const std::string& content) {
  const std::string path = gptoss::test::binary_dir() + "/tokenizer_test_" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

gptoss_status status_of_loading(const std::string& path) {
  try {
    Tokenizer::from_json_file(path);
    return gptoss_status_success;
  } catch (const Error& e) {
    return e.status();
  }
}

std::string read_prefix(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

// The GGUF view of the vocabulary, as llama.cpp's converter writes it: byte-level strings for
// every id, [PADn] for slots tokenizer.json does not name, types 1 / 3 / 5.
struct GgufVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
};

const GgufVocab& gguf_vocab_from_json() {
  static const GgufVocab vocab = [] {
    std::ifstream in(gptoss::test::tokenizer_json(), std::ios::binary);
    const auto json = nlohmann::json::parse(in);
    GgufVocab v;
    v.tokens.resize(Tokenizer::kNumTokens);
    v.types.assign(Tokenizer::kNumTokens, 5);
    for (size_t id = 0; id < v.tokens.size(); ++id) v.tokens[id] = "[PAD" + std::to_string(id) + "]";
    for (const auto& [spelled, id] : json.at("model").at("vocab").items()) {
      v.tokens.at(id.get<size_t>()) = spelled;
      v.types.at(id.get<size_t>()) = 1;
    }
    for (const auto& added : json.at("added_tokens")) {
      v.tokens.at(added.at("id").get<size_t>()) = added.at("content").get<std::string>();
      v.types.at(added.at("id").get<size_t>()) = 3;
    }
    return v;
  }();
  return vocab;
}

}  // namespace

TEST_CASE("tokenizer.json: a missing file is an io error", "[tokenizer]") {
  CHECK(status_of_loading(gptoss::test::binary_dir() + "/no/such/tokenizer.json") ==
        gptoss_status_io);
  gptoss_tokenizer_t t = nullptr;
  CHECK(gptoss_tokenizer_create_from_file("/no/such/tokenizer.json", &t) == gptoss_status_io);
  CHECK(t == nullptr);
  CHECK(std::string(gptoss_get_last_error_message()).find("/no/such/tokenizer.json") !=
        std::string::npos);
}

TEST_CASE("tokenizer.json: truncated, garbage or wrong JSON is an io error", "[tokenizer]") {
  const std::string truncated =
      write_temp("truncated.json", read_prefix(gptoss::test::tokenizer_json(), 5'000'000));
  const std::string garbage = write_temp("garbage.json", std::string("\x00\xff{[\"", 5) + "xyz");
  const std::string empty = write_temp("empty.json", "");
  const std::string not_a_tokenizer = write_temp("not_tok.json", R"({"model": {"type": "BPE"}})");
  const std::string wrong_type =
      write_temp("wrong_type.json", R"({"model": {"type": "Unigram", "vocab": {}}})");
  const std::string few_tokens = write_temp(
      "few.json", R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}},
                      "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "\\s+"}}})");
  const std::string negative_id =
      write_temp("negative.json", R"({"model": {"type": "BPE", "vocab": {"a": -1}}})");
  const std::string string_id =
      write_temp("string_id.json", R"({"model": {"type": "BPE", "vocab": {"a": "0"}}})");
  for (const std::string& path : {truncated, garbage, empty, not_a_tokenizer, wrong_type,
                                  few_tokens, negative_id, string_id}) {
    INFO(path);
    CHECK(status_of_loading(path) == gptoss_status_io);
    gptoss_tokenizer_t t = nullptr;
    CHECK(gptoss_tokenizer_create_from_file(path.c_str(), &t) == gptoss_status_io);
    CHECK(t == nullptr);
    CHECK(std::string(gptoss_get_last_error_message()).size() > 0);
  }
}

TEST_CASE("tokenizer C API: NULL arguments are invalid_argument", "[tokenizer]") {
  gptoss_tokenizer_t t = nullptr;
  CHECK(gptoss_tokenizer_create_from_file(nullptr, &t) == gptoss_status_invalid_argument);
  CHECK(gptoss_tokenizer_create_from_file(gptoss::test::tokenizer_json().c_str(), nullptr) ==
        gptoss_status_invalid_argument);
  CHECK(gptoss_tokenizer_retain(nullptr) == gptoss_status_invalid_argument);
  CHECK(gptoss_tokenizer_release(nullptr) == gptoss_status_success);
  size_t n = 0;
  CHECK(gptoss_tokenizer_get_num_tokens(nullptr, &n) == gptoss_status_invalid_argument);
  CHECK(gptoss_tokenizer_encode(nullptr, "a", 1, 0, nullptr, 0, &n) ==
        gptoss_status_invalid_argument);
}

TEST_CASE("from_vocab (GGUF metadata) encodes like tokenizer.json", "[tokenizer]") {
  const GgufVocab& gguf = gguf_vocab_from_json();
  const auto from_gguf = Tokenizer::from_vocab(gguf.tokens, gguf.types);
  const Tokenizer& from_json = gptoss::test::real_tokenizer();
  REQUIRE(from_gguf->num_tokens() == from_json.num_tokens());
  for (uint32_t id = 0; id < Tokenizer::kNumTokens; id += 997) {
    CHECK(from_gguf->token_bytes(id) == from_json.token_bytes(id));
  }
  // GGUF calls 200019+ [PADn]; the tokenizer still knows them by their o200k_harmony names.
  CHECK(from_gguf->token_bytes(200100) == "<|reserved_200100|>");
  CHECK(from_gguf->special_id("<|reserved_201087|>") == 201087u);

  std::vector<std::string> texts = {
      "Hello, world! Don't panic.", "  leading spaces\r\n\ttabs\n\n\n", "12345678 3.14159",
      "日本語のテキスト、한국어 텍스트, Кириллица", "emoji 👩‍👩‍👧‍👦 🇫🇷 ✨",
      "<|start|>user<|message|>hi<|end|><|reserved_200500|>", "def f(x):\n    return x**2\n"};
  std::ifstream cases(gptoss::test::shared_dir() + "/conformance/tokenizer/cases.jsonl");
  std::string line;
  for (int i = 0; i < 60 && std::getline(cases, line); ++i) {
    if (i % 3 == 0) texts.push_back(nlohmann::json::parse(line).at("text").get<std::string>());
  }
  for (const std::string& text : texts) {
    INFO(text);
    CHECK(from_gguf->encode_ordinary(text) == from_json.encode_ordinary(text));
    CHECK(from_gguf->encode_with_specials(text) == from_json.encode_with_specials(text));
  }
}

TEST_CASE("from_vocab rejects malformed vocabularies", "[tokenizer]") {
  const GgufVocab& gguf = gguf_vocab_from_json();
  auto status_of = [](const std::vector<std::string>& tokens, const std::vector<int32_t>& types) {
    try {
      Tokenizer::from_vocab(tokens, types);
      return gptoss_status_success;
    } catch (const Error& e) {
      return e.status();
    }
  };
  SECTION("types and tokens differ in length") {
    std::vector<int32_t> types(gguf.types.begin(), gguf.types.end() - 1);
    CHECK(status_of(gguf.tokens, types) == gptoss_status_invalid_argument);
  }
  SECTION("too few tokens") {
    std::vector<std::string> tokens(gguf.tokens.begin(), gguf.tokens.begin() + 1000);
    CHECK(status_of(tokens, {}) == gptoss_status_invalid_argument);
  }
  SECTION("too many tokens") {
    std::vector<std::string> tokens = gguf.tokens;
    tokens.push_back("<|reserved_201088|>");
    CHECK(status_of(tokens, {}) == gptoss_status_invalid_argument);
  }
  SECTION("a token that is not byte-level") {
    std::vector<std::string> tokens = gguf.tokens;
    tokens[500] = "\xe2\x82\xac";  // U+20AC is outside the byte-level alphabet
    CHECK(status_of(tokens, gguf.types) == gptoss_status_invalid_argument);
  }
  SECTION("two ids with the same bytes") {
    std::vector<std::string> tokens = gguf.tokens;
    tokens[1000] = tokens[1001];
    CHECK(status_of(tokens, gguf.types) == gptoss_status_invalid_argument);
  }
  SECTION("a text token typed as control") {
    std::vector<int32_t> types = gguf.types;
    types[42] = 3;
    CHECK(status_of(gguf.tokens, types) == gptoss_status_invalid_argument);
  }
}

TEST_CASE("byte-level spelling round-trips every byte", "[tokenizer]") {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  const std::string spelled = gptoss::tokenizer::byte_level_encode(all);
  CHECK(gptoss::tokenizer::byte_level_encode(" ") == "\xc4\xa0");  // 'Ġ', GPT-2's space
  std::string decoded;
  REQUIRE(gptoss::tokenizer::append_byte_level_decoded(spelled, decoded));
  CHECK(decoded == all);
  std::string junk;
  CHECK_FALSE(gptoss::tokenizer::append_byte_level_decoded("\xc4", junk));        // truncated
  CHECK_FALSE(gptoss::tokenizer::append_byte_level_decoded("\xc1\x81", junk));    // overlong
  CHECK_FALSE(gptoss::tokenizer::append_byte_level_decoded(" ", junk));           // raw space
  CHECK_FALSE(gptoss::tokenizer::append_byte_level_decoded("\xc5\x84", junk));    // U+0144
}
