// One tokenizer shared by several threads through the C API, as the header allows: encoding
// (which fills the shared piece cache), decoding, Harmony rendering and a streaming parser per
// thread, with the handle retained and released on the workers. Every result must equal the
// same call made alone. Tagged [concurrency]: the ThreadSanitizer build runs it
// (docs/reliability.md). Catch2 assertions run on the main thread only.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "gptoss.h"
#include "support/paths.hpp"

namespace {

struct Work {
  std::vector<uint32_t> ids;
  std::string decoded;
  std::vector<uint32_t> rendered;
  std::string parsed;
  gptoss_status worst = gptoss_status_success;
  void note(gptoss_status st) {
    if (st != gptoss_status_success && st != gptoss_status_buffer_too_small) worst = st;
  }
};

Work run(gptoss_tokenizer_t tok, const std::string& text) {
  Work w;
  size_t n = 0;
  const uint32_t flags = GPTOSS_ENCODE_ALLOW_SPECIAL;
  w.note(gptoss_tokenizer_encode(tok, text.data(), text.size(), flags, nullptr, 0, &n));
  w.ids.resize(n);
  w.note(gptoss_tokenizer_encode(tok, text.data(), text.size(), flags, w.ids.data(), n, &n));
  w.note(gptoss_tokenizer_decode_tokens(tok, w.ids.data(), w.ids.size(), nullptr, 0, &n));
  w.decoded.resize(n);
  w.note(gptoss_tokenizer_decode_tokens(tok, w.ids.data(), w.ids.size(), w.decoded.data(), n, &n));

  const std::string conversation =
      R"([{"role":"user","content":")" + std::to_string(text.size()) + R"( bytes"},)"
      R"({"role":"assistant","channel":"final","content":"ok"}])";
  w.note(gptoss_harmony_render(tok, conversation.c_str(), nullptr, nullptr, 0, &n));
  w.rendered.resize(n);
  w.note(gptoss_harmony_render(tok, conversation.c_str(), nullptr, w.rendered.data(), n, &n));

  gptoss_harmony_parser_t p = nullptr;
  w.note(gptoss_harmony_parser_create(tok, "assistant", 0, &p));
  for (uint32_t id : w.ids) w.note(gptoss_harmony_parser_process_token(p, id));
  const char* json = nullptr;
  w.note(gptoss_harmony_parser_finish(p, &json));
  if (json) w.parsed = json;
  gptoss_harmony_parser_release(p);
  return w;
}

}  // namespace

TEST_CASE("one tokenizer shared by threads: encode, decode, render, parse", "[concurrency][tokenizer]") {
  gptoss_tokenizer_t tok = nullptr;
  REQUIRE(gptoss_tokenizer_create_from_file(gptoss::test::tokenizer_json().c_str(), &tok) ==
          gptoss_status_success);
  std::ifstream in(gptoss::test::shared_dir() + "/conformance/tokenizer/bench.txt", std::ios::binary);
  const std::string bench((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bench.size() > 40000);
  constexpr size_t kThreads = 4;
  std::vector<std::string> texts;
  for (size_t i = 0; i < kThreads; ++i)  // overlapping slices: the threads share cache entries
    texts.push_back("<|channel|>final<|message|>" + bench.substr(i * 5000, 20000) + "<|end|>");

  // Together first, so that the threads fill the fresh piece cache concurrently.
  std::vector<Work> together(kThreads);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < kThreads; ++i) {
    REQUIRE(gptoss_tokenizer_retain(tok) == gptoss_status_success);
    threads.emplace_back([&, i] {
      together[i] = run(tok, texts[i]);
      gptoss_tokenizer_release(tok);
    });
  }
  for (auto& t : threads) t.join();
  std::vector<Work> alone;
  for (const auto& t : texts) alone.push_back(run(tok, t));
  gptoss_tokenizer_release(tok);

  for (size_t i = 0; i < kThreads; ++i) {
    INFO("thread " << i);
    CHECK(together[i].worst == gptoss_status_success);
    CHECK(alone[i].worst == gptoss_status_success);
    CHECK(together[i].decoded == texts[i]);
    CHECK(together[i].ids == alone[i].ids);
    CHECK(together[i].rendered == alone[i].rendered);
    CHECK(together[i].parsed == alone[i].parsed);
  }
}
