#include "libgptoss/tokenizer/token_trie.hpp"

#include <algorithm>

namespace gptoss::tokenizer {

TokenTrie::TokenTrie(std::vector<std::pair<uint32_t, std::string>> tokens) {
  tokens.erase(std::remove_if(tokens.begin(), tokens.end(), [](const auto& t) { return t.second.empty(); }),
               tokens.end());
  std::sort(tokens.begin(), tokens.end(), [](const auto& a, const auto& b) {
    return a.second < b.second || (a.second == b.second && a.first < b.first);
  });
  // In sorted order every token ends at the newest node or (same bytes) at the previous
  // token's node, so ids_ is grouped by node in node order.
  std::vector<uint32_t> path;  // path[d - 1]: node at depth d of the previous token
  std::vector<uint32_t> end_node;
  std::string_view prev;
  for (const auto& [id, bytes] : tokens) {
    size_t lcp = 0;
    while (lcp < prev.size() && lcp < bytes.size() && prev[lcp] == bytes[lcp]) ++lcp;
    for (size_t d = path.size(); d > lcp; --d) skip_[path[d - 1]] = uint32_t(byte_.size());
    path.resize(lcp);
    for (size_t d = lcp; d < bytes.size(); ++d) {
      path.push_back(uint32_t(byte_.size()));
      byte_.push_back(static_cast<uint8_t>(bytes[d]));
      depth_.push_back(uint32_t(d + 1));
      skip_.push_back(0);
    }
    end_node.push_back(path.back());
    ids_.push_back(id);
    max_depth_ = std::max<uint32_t>(max_depth_, uint32_t(bytes.size()));
    prev = bytes;
  }
  for (uint32_t node : path) skip_[node] = uint32_t(byte_.size());
  first_id_.assign(byte_.size() + 1, 0);
  for (uint32_t node : end_node) ++first_id_[node + 1];
  for (size_t i = 1; i < first_id_.size(); ++i) first_id_[i] += first_id_[i - 1];
}

}  // namespace gptoss::tokenizer
