#include "op_profile.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace gptoss::cpu {

namespace {
const char* const kNames[int(OpKind::count)] = {"embedding", "rmsnorm", "linear",   "rope", "kv_write",
                                                "attention", "router",  "moe", "add"};
}

OpProfile::OpProfile() {
  const char* env = std::getenv("GPTOSS_CPU_PROFILE");
  enabled_ = env != nullptr && *env != '\0' && std::strcmp(env, "0") != 0;
}

std::string OpProfile::report() const {
  uint64_t total = 0;
  std::vector<int> order;
  for (int k = 0; k < int(OpKind::count); ++k) {
    total += ns_[k].load();
    if (calls_[k].load() > 0) order.push_back(k);
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) { return ns_[a].load() > ns_[b].load(); });
  std::string out;
  for (int k : order) {
    char line[128];
    std::snprintf(line, sizeof line, "%s%s %.1f ms / %llu calls (%.1f%%)", out.empty() ? "" : ", ",
                  kNames[k], double(ns_[k].load()) / 1e6, (unsigned long long)calls_[k].load(),
                  100.0 * double(ns_[k].load()) / double(total));
    out += line;
  }
  return out;
}

}  // namespace gptoss::cpu
