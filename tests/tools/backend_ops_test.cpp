// gptoss-conformance backend-ops through its command line: clean backends pass, and a backend
// whose op computes a wrong value or writes past its output fails, saying which (the strict
// device sabotaged through GPTOSS_STRICT_SABOTAGE).
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "support/paths.hpp"
#include "tests/model/model_test_util.hpp"

namespace {

struct Run {
  int rc;
  std::string output;
};

Run backend_ops(const std::string& env, const std::string& args) {
  gptoss::test::TempDir dir;
  const std::string tool = gptoss::test::binary_dir() + "/bin/gptoss-conformance";
  const std::string log = dir / "log.txt";
  const int rc = std::system((env + " '" + tool + "' backend-ops " + args + " > '" + log + "' 2>&1").c_str());
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, text.str()};
}

}  // namespace

TEST_CASE("backend-ops: the strict device passes the tail shapes", "[tools]") {
  const Run r = backend_ops("", "-b strict -o linear,rmsnorm,attention,moe,sample --shapes tails");
  INFO(r.output);
  CHECK(r.rc == 0);
  CHECK(r.output.find("FAIL") == std::string::npos);
  CHECK(r.output.find("PASS strict") != std::string::npos);
}

TEST_CASE("backend-ops: a wrong op and a write past an output are failures", "[tools]") {
  const Run wrong = backend_ops("GPTOSS_STRICT_SABOTAGE=wrong:linear", "-b strict -o linear --shapes tails");
  INFO(wrong.output);
  CHECK(wrong.rc == 1);
  CHECK(wrong.output.find("FAIL strict linear") != std::string::npos);
  CHECK(wrong.output.find("PASS") == std::string::npos);  // every linear case is hit
  const Run over = backend_ops("GPTOSS_STRICT_SABOTAGE=overrun:rmsnorm", "-b strict -o rmsnorm --shapes tails");
  INFO(over.output);
  CHECK(over.rc == 1);
  CHECK(over.output.find("wrote outside its output") != std::string::npos);
}

TEST_CASE("backend-ops: bad options are usage errors", "[tools]") {
  for (const char* args : {"-o nosuchop", "--shapes huge", "--precision medium", "--perf 0", "-b", "--frob 1"}) {
    INFO(args);
    const Run r = backend_ops("", args);
    CHECK(r.rc == 2);
    CHECK(r.output.find("usage:") != std::string::npos);
  }
  const Run missing = backend_ops("", "-b no-such-backend --shapes tails");
  CHECK(missing.rc == 1);
  CHECK(missing.output.find("no-such-backend") != std::string::npos);
}
