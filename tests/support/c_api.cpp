#include "support/c_api.hpp"

#include <algorithm>
#include <fstream>

namespace gptoss::test {

const char* test_backend() {
  const std::string test = Catch::getResultCapture().getCurrentTestName();
  for (const Catch::TestCase& t : Catch::getRegistryHub().getTestCaseRegistry().getAllTests())
    if (t.name == test && std::find(t.tags.begin(), t.tags.end(), "fixed-device") != t.tags.end())
      FAIL("'" << test << "' is tagged [fixed-device] but loads a model on the test device");
  const char* b = std::getenv("GPTOSS_TEST_BACKEND");
  return b != nullptr && *b != '\0' ? b : "cpu";
}

std::vector<uint32_t> prompt_ids(const std::string& name) {
  std::ifstream f(logits_dir() + "/" + name + ".ids.txt");
  REQUIRE(f.good());
  std::vector<uint32_t> ids;
  uint64_t v;
  while (f >> v) ids.push_back(uint32_t(v));
  return ids;
}

}  // namespace gptoss::test
