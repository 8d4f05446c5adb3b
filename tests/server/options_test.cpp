// gptoss-server's command line: defaults, derived values, and refused flags with their names.
#include <catch2/catch.hpp>

#include <cstdio>
#include <random>

#include "closest_flag.hpp"
#include "server_options.hpp"

using namespace gptoss_server;

namespace {

std::optional<ServerOptions> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "gptoss-server");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return parse_server_options(int(argv.size()), argv.data());
}

std::string error_of(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("server options: defaults and derived values", "[server][options]") {
  const auto o = parse({"--model", "/models/gpt-oss-20b/"});
  REQUIRE(o);
  CHECK(o->model_name == "gpt-oss-20b");
  CHECK(o->host == "127.0.0.1");
  CHECK(o->port == 8000);
  CHECK(o->engine.max_running == 16);
  CHECK(o->engine.context_length == 8192);
  CHECK(o->engine.kv_tokens == 4 * 8192);
  CHECK(o->http_threads == 16 + 64 + 8);
  CHECK(o->constrain);
  CHECK(o->reasoning_budget[0] == -1);
  const auto m = parse({"-m", "x.gguf", "--model-name=mine", "--context=1024", "--kv-tokens", "4096", "--port", "0",
                        "--reasoning-budget", "low=16,high=512", "--no-constrain", "--kv-dtype", "bf16"});
  REQUIRE(m);
  CHECK(m->model_name == "mine");
  CHECK(m->engine.kv_tokens == 4096);
  CHECK(m->port == 0);
  CHECK(m->reasoning_budget[0] == 16);
  CHECK(m->reasoning_budget[1] == -1);
  CHECK(m->reasoning_budget[2] == 512);
  CHECK_FALSE(m->constrain);
  CHECK(m->engine.kv_dtype == gptoss_kv_dtype_bf16);
  CHECK(parse({"--model", "x", "--reasoning-budget", "100"})->reasoning_budget[1] == 100);
  CHECK(o->conversation_date.empty());
  CHECK(parse({"--model", "x", "--date", "2026-11-26"})->conversation_date == "2026-11-26");
  CHECK(parse({"--model", "x", "--date=2024-02-29"})->conversation_date == "2024-02-29");
  // Speculative decoding: prompt lookup and jump-forward by default.
  CHECK(o->engine.speculation.on);
  CHECK(o->engine.speculation.draft_max == 8);
  CHECK(o->engine.speculation.cost_bound);
  CHECK_FALSE(parse({"--model", "x", "--draft-cost-bound", "off"})->engine.speculation.cost_bound);
  CHECK(parse({"--model", "x", "--draft-cost-bound=on"})->engine.speculation.cost_bound);
  CHECK(o->draft_model_path.empty());
  const auto off = parse({"--model", "x", "--draft", "none"});
  CHECK_FALSE(off->engine.speculation.on);
  const auto k = parse({"--model", "x", "--draft=ngram", "--draft-max", "0", "--draft-model", "/"});
  CHECK(k->engine.speculation.on);
  CHECK(k->engine.speculation.draft_max == 0);
  CHECK(k->draft_model_path == "/");
}

TEST_CASE("server options: bad speculative decoding flags", "[server][options][bad-input]") {
  CHECK_THAT(error_of({"--model", "x", "--draft", "model"}),
             Catch::Contains("--draft must be one of ngram, none"));
  CHECK_THAT(error_of({"--model", "x", "--draft", ""}), Catch::Contains("--draft"));
  CHECK_THAT(error_of({"--model", "x", "--draft-max", "-1"}), Catch::Contains("--draft-max"));
  CHECK_THAT(error_of({"--model", "x", "--draft-max", "257"}),
             Catch::Contains("--draft-max must be between 0 and 256"));
  CHECK_THAT(error_of({"--model", "x", "--draft-max", "8x"}), Catch::Contains("--draft-max"));
  CHECK_THAT(error_of({"--model", "x", "--draft-model"}), Catch::Contains("needs a value"));
  CHECK_THAT(error_of({"--model", "x", "--draft-cost-bound", "maybe"}),
             Catch::Contains("--draft-cost-bound must be one of on, off"));
  CHECK_THAT(error_of({"--model", "x", "--draft-model", "/nonexistent/draft"}),
             Catch::Contains("--draft-model: no such file or directory"));
  CHECK_THAT(error_of({"--model", "x", "--draft", "none", "--draft-model", "/"}),
             Catch::Contains("--draft none"));
}

TEST_CASE("server options: mistakes name the flag", "[server][options][bad-input]") {
  CHECK_THAT(error_of({}), Catch::Contains("--model"));
  CHECK_THAT(error_of({"--model", "x", "--port", "70000"}), Catch::Contains("--port"));
  CHECK_THAT(error_of({"--model", "x", "--port", "80x"}), Catch::Contains("--port"));
  CHECK_THAT(error_of({"--model", "x", "--max-running"}), Catch::Contains("needs a value"));
  CHECK_THAT(error_of({"--model", "x", "--frobnicate"}), Catch::Contains("--frobnicate"));
  CHECK_THAT(error_of({"--model", "x", "--kv-dtype", "f16"}), Catch::Contains("--kv-dtype"));
  CHECK_THAT(error_of({"--model", "x", "--context", "9000", "--kv-tokens", "8192"}), Catch::Contains("--kv-tokens"));
  CHECK_THAT(error_of({"--model", "x", "--max-running", "300"}), Catch::Contains("--step-tokens"));
  CHECK_THAT(error_of({"--model", "x", "--reasoning-budget", "huge=5"}), Catch::Contains("huge"));
  CHECK_THAT(error_of({"--model", "x", "--host", "0.0.0.0"}), Catch::Contains("without authentication"));
  CHECK(error_of({"--model", "x", "--host", "0.0.0.0", "--api-key", "k"}).empty());
  CHECK_THAT(error_of({"--model", "x", "--api-key-file", "/nonexistent/key"}), Catch::Contains("--api-key-file"));
  CHECK_THAT(error_of({"--model", "x", "--enable-bench=1"}), Catch::Contains("takes no value"));
  for (const char* date : {"2026-13-01", "2025-02-29", "2026-11-31", "26-11-26", "2026/11/26", "2026-1-261", "", "2026-11-2x"})
    CHECK_THAT(error_of({"--model", "x", "--date", date}), Catch::Contains("--date"));
}

TEST_CASE("server options: an unknown flag suggests the nearest one",
          "[server][options][bad-input]") {
  CHECK_THAT(
      error_of({"--model", "x", "--max-runing", "4"}),
      Catch::Equals("unknown option --max-runing; did you mean --max-running? (see --help)"));
  CHECK_THAT(error_of({"--model", "x", "--prot=9000"}), Catch::Contains("did you mean --port?"));
  CHECK_THAT(error_of({"--model", "x", "--kv-dtpye", "bf16"}),
             Catch::Contains("did you mean --kv-dtype?"));
  CHECK_THAT(error_of({"--model", "x", "--insecure-noauth"}),
             Catch::Contains("did you mean --insecure-no-auth?"));
  CHECK_THAT(error_of({"-model", "x"}), Catch::Contains("did you mean --model?"));
  // Nothing near: no guess.
  CHECK_THAT(error_of({"--model", "x", "--frobnicate"}),
             Catch::Equals("unknown option --frobnicate (see --help)"));
  CHECK_THAT(error_of({"--model", "x", "-z"}), Catch::Equals("unknown option -z (see --help)"));

  // One random edit (insertion, deletion, substitution, swap) of a real flag's name always
  // gets a suggestion at most one edit from what was typed.
  const std::vector<std::string> flags = {
      "--model-name",    "--tokenizer", "--threads",   "--precision",    "--max-queue",
      "--step-tokens",   "--context",   "--kv-tokens", "--prefix-cache", "--reasoning-budget",
      "--date",          "--host",      "--port",      "--api-key-file", "--read-timeout",
      "--drain-timeout", "--store",     "--log-level"};
  const uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 500; ++i) {
    std::string typo = flags[rng() % flags.size()];
    const size_t at = 2 + rng() % (typo.size() - 2);
    const char letter = char('a' + rng() % 26);
    switch (rng() % 4) {
      case 0: typo.insert(at, 1, letter); break;
      case 1: typo.erase(at, 1); break;
      case 2: typo[at] = letter; break;
      default:
        if (at + 1 < typo.size()) std::swap(typo[at], typo[at + 1]);
    }
    const std::string error = error_of({"--model", "x", typo, "1"});
    if (error.rfind("unknown option", 0) != 0) continue;  // the edit made another real flag
    INFO(typo << ": " << error);
    const size_t at_guess = error.find("did you mean ");
    REQUIRE(at_guess != std::string::npos);
    const std::string guess = error.substr(at_guess + 13, error.find('?') - at_guess - 13);
    CHECK(gptoss_flags::edit_distance(typo.substr(2), guess.substr(2)) <= 1);
  }
}

TEST_CASE("server options: --help ends with the first commands to try", "[server][options]") {
  std::FILE* out = std::tmpfile();
  REQUIRE(out);
  print_server_usage(out);
  std::rewind(out);
  std::string text;
  for (int c; (c = std::fgetc(out)) != EOF;) text += char(c);
  std::fclose(out);
  const size_t steps = text.rfind("first steps:\n");
  REQUIRE(steps != std::string::npos);
  const std::string tail = text.substr(steps);
  CHECK_THAT(tail, Catch::Contains("gptoss-server --model"));
  CHECK_THAT(tail, Catch::Contains("curl http://127.0.0.1:8000/v1/responses"));
  CHECK_THAT(tail, Catch::Contains("--api-key-file"));
}
