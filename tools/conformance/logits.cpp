#include <cstdio>
#include "tools/conformance/conformance.hpp"
namespace gptoss::conformance {
int run_logits(const Args&) {
  std::fprintf(stderr, "logits conformance: not built yet\n");
  std::printf("0 passed, 1 failed\n");
  return 1;
}
}  // namespace gptoss::conformance
