#include "op_profile.hpp"

#include "cpu_backend.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace gptoss::cpu {

namespace {
const char* const kNames[int(OpKind::count)] = {
    "embedding", "rmsnorm", "linear", "rope", "kv_write", "attention", "router", "moe", "add",
    "linear_qkv", "add_rmsnorm", "rope_kv_write", "sample"};
}

uint64_t weight_rows_bytes(const Weight& w, size_t rows) {
  return uint64_t(rows) * (w.row_bytes + (w.dtype == gptoss_dtype_mxfp4 ? w.cols / 32 : 0));
}

uint64_t routed_expert_bytes(const int32_t* ids, size_t n_slots, const Weight& mlp1,
                             const Weight& mlp2) {
  if (ids == nullptr || mlp1.ndim != 3 || mlp1.shape[0] <= 0) return 0;
  const size_t n_experts = size_t(mlp1.shape[0]);
  std::vector<bool> used(n_experts, false);
  size_t distinct = 0;
  for (size_t i = 0; i < n_slots; ++i) {
    const int64_t e = int64_t(ids[i]) - mlp1.first_expert;
    if (e >= 0 && size_t(e) < n_experts && !used[size_t(e)]) {
      used[size_t(e)] = true;
      ++distinct;
    }
  }
  return distinct * (weight_rows_bytes(mlp1, mlp1.rows / n_experts) +
                     weight_rows_bytes(mlp2, mlp2.rows / n_experts));
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
    char line[160];
    std::snprintf(line, sizeof line, "%s%s %.1f ms / %llu calls (%.1f%%", out.empty() ? "" : ", ",
                  kNames[k], double(ns_[k].load()) / 1e6, (unsigned long long)calls_[k].load(),
                  100.0 * double(ns_[k].load()) / double(total));
    out += line;
    if (bytes_[k].load() > 0 && ns_[k].load() > 0) {
      std::snprintf(line, sizeof line, ", %.1f GB/s", double(bytes_[k].load()) / double(ns_[k].load()));
      out += line;
    }
    out += ")";
  }
  return out;
}

}  // namespace gptoss::cpu
