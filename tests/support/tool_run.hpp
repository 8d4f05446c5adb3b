#pragma once
// Runs a command line through the shell, stdout and stderr captured (the tools' tests).
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/model/model_test_util.hpp"

namespace gptoss::test {

struct ToolRun {
  int rc;              // exit status, -1 if it did not exit
  std::string output;  // stdout and stderr
};

inline ToolRun run_tool(const std::string& command) {
  TempDir dir;
  const std::string log = dir / "log.txt";
  const int rc = std::system((command + " > '" + log + "' 2>&1").c_str());
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, text.str()};
}

}  // namespace gptoss::test
