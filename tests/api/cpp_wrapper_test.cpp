// include/gptoss.hpp, the header-only C++ wrapper: failures as gptoss::error with the status
// and the library's message, move-only ownership, and a round trip on the shared conformance
// model. Built with -pedantic (tests/CMakeLists.txt) so the installed header stays clean.
#include <gptoss.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <type_traits>
#include <vector>

#include "support/paths.hpp"

namespace {

std::string model_dir() { return gptoss::test::logits_dir() + "/model-hf"; }

// The shared model has no tokenizer.json of its own.
gptoss::model load_model() {
  gptoss_model_options options;
  gptoss::check(gptoss_model_options_init(&options), "gptoss_model_options_init");
  const std::string tokenizer = gptoss::test::tokenizer_json();
  options.tokenizer_path = tokenizer.c_str();
  return gptoss::model::load(model_dir(), &options);
}

template <typename T>
constexpr bool move_only =
    !std::is_copy_constructible_v<T> && !std::is_copy_assignable_v<T> &&
    std::is_nothrow_move_constructible_v<T> && std::is_nothrow_move_assignable_v<T>;

static_assert(move_only<gptoss::model> && move_only<gptoss::tokenizer> &&
              move_only<gptoss::kvcache> && move_only<gptoss::context> &&
              move_only<gptoss::sampler> && move_only<gptoss::harmony_parser> &&
              move_only<gptoss::grammar> && move_only<gptoss::constraint> &&
              move_only<gptoss::stop_strings>);
static_assert(std::is_base_of_v<std::runtime_error, gptoss::error>);

}  // namespace

TEST_CASE("c++ api (gptoss.hpp): a failed call throws gptoss::error with the status and message",
          "[api][cpp][fixed-device]") {
  try {
    (void)gptoss::model::load(gptoss::test::shared_dir() + "/no-such-model");
    FAIL("loading a missing model did not throw");
  } catch (const gptoss::error& e) {
    CHECK(e.status() == gptoss_status_io);
    CHECK(e.call() == "gptoss_model_create_with_options");
    CHECK_FALSE(e.message().empty());
    const std::string what = e.what();
    CHECK(what == e.call() + ": " + gptoss_status_to_string(gptoss_status_io) + ": " + e.message());
  }
  // The caller's words for what failed.
  try {
    gptoss::check(gptoss_status_invalid_argument, "loading the model");
    FAIL("check did not throw");
  } catch (const gptoss::error& e) {
    CHECK(e.status() == gptoss_status_invalid_argument);
    CHECK(std::string(e.what()).rfind("loading the model: ", 0) == 0);
  }
  CHECK_NOTHROW(gptoss::check(gptoss_status_success, "nothing"));
}

TEST_CASE("c++ api (gptoss.hpp): handles move their reference and release it once",
          "[api][cpp][fixed-device]") {
  const gptoss::model model = load_model();
  gptoss::tokenizer a = model.get_tokenizer();
  REQUIRE(a);
  const gptoss_tokenizer_t raw = a.get();

  gptoss::tokenizer b = std::move(a);
  CHECK_FALSE(a);  // moved-from is empty by contract
  CHECK(b.get() == raw);

  gptoss::tokenizer c;
  c = std::move(b);
  CHECK_FALSE(b);
  CHECK(c.get() == raw);

  // release() hands the reference over; reset() adopts one.
  gptoss_tokenizer_t taken = c.release();
  CHECK_FALSE(c);
  c.reset(taken);
  CHECK(c.get() == raw);
  c.reset();
  CHECK_FALSE(c);

  // A second reference of its own: usable after the first is gone.
  gptoss::tokenizer again = model.get_tokenizer();
  CHECK_FALSE(again.encode("still here").empty());
}

TEST_CASE("c++ api (gptoss.hpp): tokenize, render and generate on the conformance model",
          "[api][cpp][fixed-device]") {
  const gptoss::model model = load_model();
  const gptoss::tokenizer tokenizer = model.get_tokenizer();
  const gptoss_model_info info = model.info();
  REQUIRE(info.vocab_size > 0);

  const std::string text = "The quick brown fox jumps over the lazy dog.";
  const std::vector<uint32_t> ids = tokenizer.encode(text);
  REQUIRE_FALSE(ids.empty());
  CHECK(tokenizer.decode(ids) == text);
  std::string joined;
  for (uint32_t id : ids) joined += tokenizer.token_bytes(id);
  CHECK(joined == text);
  // A special token's string is its id only when asked.
  const uint32_t start = tokenizer.special_token(gptoss_special_token_start);
  CHECK(tokenizer.encode("<|start|>", GPTOSS_ENCODE_ALLOW_SPECIAL) == std::vector<uint32_t>{start});
  CHECK(tokenizer.encode("<|start|>").size() > 1);

  const std::vector<uint32_t> prompt =
      tokenizer.render(R"({"messages": [{"role": "user", "content": "Hi"}]})");
  REQUIRE(prompt.size() > 2);
  CHECK(prompt.front() == start);

  gptoss_context_options context_options;
  gptoss::check(gptoss_context_options_init(&context_options), "gptoss_context_options_init");
  context_options.context_length = 128;
  const gptoss::context context = gptoss::context::create(model.get(), &context_options);
  context.append(prompt);
  CHECK(context.tokens() == prompt);
  gptoss_sampler_options sampler_options;
  gptoss::check(gptoss_sampler_options_init(&sampler_options), "gptoss_sampler_options_init");
  sampler_options.temperature = 0.0f;
  const gptoss::sampler sampler = gptoss::sampler::create(&sampler_options);
  std::vector<uint32_t> output;
  for (int i = 0; i < 4; ++i) {
    const uint32_t token = context.sample(sampler.get());
    CHECK(token < info.vocab_size);
    output.push_back(token);
    context.append(std::span(&output.back(), 1));
  }
  CHECK(context.num_tokens() == prompt.size() + output.size());
  CHECK(gptoss::num_processed_tokens(context.get()) >= prompt.size());

  // Greedy decoding again from the same prompt gives the same tokens.
  context.truncate(prompt.size());
  std::vector<uint32_t> again;
  for (int i = 0; i < 4; ++i) {
    again.push_back(context.sample(sampler.get()));
    context.append(std::span(&again.back(), 1));
  }
  CHECK(again == output);

  // A token outside the vocabulary is the library's invalid_argument, thrown.
  const uint32_t bad = uint32_t(info.vocab_size);
  try {
    context.append(std::span(&bad, 1));
    FAIL("appending a token outside the vocabulary did not throw");
  } catch (const gptoss::error& e) {
    CHECK(e.status() == gptoss_status_invalid_argument);
    CHECK(e.call() == "gptoss_context_append_tokens");
  }
}

TEST_CASE("c++ api (gptoss.hpp): grammars, constraints and stop strings",
          "[api][cpp][fixed-device]") {
  const gptoss::model model = load_model();
  const gptoss::tokenizer tokenizer = model.get_tokenizer();
  const gptoss::grammar grammar =
      gptoss::grammar::json_schema(tokenizer.get(), R"({"type": "boolean"})");
  const gptoss::constraint constraint = gptoss::constraint::create(grammar.get());
  CHECK(constraint.min_tokens() > 0);
  CHECK_FALSE(constraint.finished());
  std::vector<uint32_t> mask(GPTOSS_MASK_WORDS(model.info().vocab_size));
  CHECK(constraint.fill_mask(mask) == mask.size());
  for (uint32_t id : tokenizer.encode("true")) constraint.accept(id);
  CHECK_FALSE(constraint.finished());
  constraint.accept(tokenizer.special_token(gptoss_special_token_end));
  CHECK(constraint.finished());
  try {
    constraint.accept(tokenizer.special_token(gptoss_special_token_end));
    FAIL("a token after the end did not throw");
  } catch (const gptoss::error& e) {
    CHECK(e.status() == gptoss_status_invalid_state);
  }
  constraint.restart();
  CHECK_FALSE(constraint.finished());
  CHECK_THROWS_AS(gptoss::grammar::json_schema(tokenizer.get(), "{not json"), gptoss::error);

  const char* const stops[] = {"END"};
  const gptoss::stop_strings stop = gptoss::stop_strings::create(stops);
  const gptoss::stop_strings::output first = stop.push("abcEN");
  CHECK(first.stop_index < 0);
  std::string seen(first.text);
  const gptoss::stop_strings::output second = stop.push("D and more");
  seen += second.text;
  CHECK(second.stop_index == 0);
  CHECK(seen == "abc");
}
