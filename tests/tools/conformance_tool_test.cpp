// gptoss-conformance's command line: a mistyped, incomplete or foreign option is a usage error
// (exit 2) that names it, before anything runs; never taken for the folder, never ignored.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/paths.hpp"
#include "support/tool_run.hpp"
#include "tests/model/model_test_util.hpp"

namespace {

namespace fs = std::filesystem;
using gptoss::test::TempDir;

using Run = gptoss::test::ToolRun;

Run conformance(const TempDir&, const std::string& args) {
  const std::string tool = gptoss::test::binary_dir() + "/bin/gptoss-conformance";
  REQUIRE(fs::is_regular_file(tool));
  return gptoss::test::run_tool("'" + tool + "' " + args);
}

}  // namespace

TEST_CASE("conformance tool: bad options are usage errors that name them", "[tools]") {
  TempDir dir;
  const std::string d = "'" + (dir / "cases") + "'";
  fs::create_directories(dir / "cases");
  struct Case {
    std::string args, message;
  } cases[] = {
      {"logits --kv " + d, "option --kv needs f32|bf16 (before DIR)"},
      {"logits --kv f16 " + d, "option --kv takes f32|bf16, not 'f16'"},
      {"logits --kv 'f32|bf16' " + d, "option --kv takes f32|bf16, not 'f32|bf16'"},
      {"logits --kv '' " + d, "option --kv takes f32|bf16, not ''"},
      {"logits --precision " + d, "option --precision needs exact|fast"},
      {"logits --format onnx " + d, "option --format takes hf|gguf|both, not 'onnx'"},
      {"logits --format", "option --format needs hf|gguf|both"},
      {"logits --tokenizer-json " + d, "option --tokenizer-json needs a value"},
      {"logits --backend " + d, "option --backend needs a value"},
      {"logits --kv --verbose " + d, "option --kv needs f32|bf16"},
      {"logits --frobnicate " + d, "unknown option --frobnicate for logits"},
      {"tokenizer --precision fast " + d, "unknown option --precision for tokenizer"},
      {"harmony --verbose " + d, "unknown option --verbose for harmony"},
      {"harmony " + d + " " + d, "more than one DIR"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    const Run r = conformance(dir, c.args);
    CHECK(r.rc == 2);
    CHECK_THAT(r.output, Catch::Contains(c.message));
    CHECK_THAT(r.output, !Catch::Contains("passed"));  // nothing ran
  }
}

TEST_CASE("conformance tool: good options reach the subcommand", "[tools]") {
  // The options parse; the empty folder then fails in the subcommand itself (exit 1, one
  // failure counted), which shows the values went through rather than being rejected.
  TempDir dir;
  fs::create_directories(dir / "cases");
  const Run r = conformance(dir, "logits --format gguf --precision fast --kv bf16 --verbose '" +
                                     (dir / "cases") + "'");
  CHECK(r.rc == 1);
  CHECK_THAT(r.output, Catch::Contains("no manifest.json in"));
  CHECK_THAT(r.output, Catch::Contains("0 passed, 1 failed"));
}

TEST_CASE("conformance tool: --backend names the backend the model loads on", "[tools]") {
  TempDir dir;
  const Run r = conformance(dir, "logits --backend nosuch --tokenizer-json '" + gptoss::test::tokenizer_json() +
                                     "' '" + gptoss::test::logits_dir() + "'");
  CHECK(r.rc == 1);
  CHECK_THAT(r.output, Catch::Contains("unknown backend 'nosuch'"));
}
