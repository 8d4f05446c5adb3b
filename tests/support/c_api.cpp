#include "support/c_api.hpp"

#include <fstream>

namespace gptoss::test {

std::vector<uint32_t> prompt_ids(const std::string& name) {
  std::ifstream f(logits_dir() + "/" + name + ".ids.txt");
  REQUIRE(f.good());
  std::vector<uint32_t> ids;
  uint64_t v;
  while (f >> v) ids.push_back(uint32_t(v));
  return ids;
}

}  // namespace gptoss::test
