#pragma once
// Checkpoints of random weights written by gptoss-make-model, so that a guarantee is tested on
// models nobody tuned it to, and their loading with the test tokenizer (the generator writes
// none).
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "support/c_api.hpp"
#include "support/paths.hpp"
#include "tests/model/model_test_util.hpp"

namespace gptoss::test {

// Runs `gptoss-make-model --format hf ARGS` (a preset, a seed, ...) into dir; the checkpoint's
// directory. The tool's output is shown if it fails.
inline std::string generate_model(const TempDir& dir, const std::string& args) {
  const std::string tool = binary_dir() + "/bin/gptoss-make-model";
  REQUIRE(std::filesystem::is_regular_file(tool));
  const std::string cmd = "'" + tool + "' --format hf " + args + " --out '" + (dir / "m") +
                          "' > '" + (dir / "log.txt") + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::vector<uint8_t> log = read_bytes(dir / "log.txt");
  INFO("gptoss-make-model " << args << ": " << std::string(log.begin(), log.end()));
  REQUIRE((WIFEXITED(rc) && WEXITSTATUS(rc) == 0));
  return dir / "m/model-hf";
}

inline ModelPtr load_generated_model(const std::string& path, gptoss_precision precision) {
  gptoss_model_options o;
  gptoss_model_options_init(&o);
  o.backend = test_backend();
  o.precision = precision;
  const std::string tok = tokenizer_json();
  o.tokenizer_path = tok.c_str();
  gptoss_model_t m = nullptr;
  GPTOSS_REQUIRE_OK(gptoss_model_create_with_options(path.c_str(), &o, &m));
  return ModelPtr(m);
}

}  // namespace gptoss::test
