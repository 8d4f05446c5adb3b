#pragma once
// The known flag nearest to a mistyped one, for "unknown option --max-token; did you mean
// --max-tokens?". Shared by the gptoss CLI and gptoss-server, whose option parsers each keep
// their own list of flags.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace gptoss_flags {

// Edit distance counting an insertion, a deletion, a substitution or a swap of two adjacent
// characters as one edit (optimal string alignment): "--modle" is one edit from "--model".
inline size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] =
          std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// The known long flag nearest to `unknown`, or "" when none is close: within a third of the
// flag's length (at most 3 edits), so "--threds" finds "--threads" but "--colour" finds
// nothing. The dashes are not compared ("-max-tokens" and "max-tokens" find "--max-tokens");
// single-letter flags are never suggested (every short typo would be one edit from one).
inline std::string closest_flag(std::string_view unknown, const std::vector<std::string>& known) {
  const auto name = [](std::string_view f) {
    return f.substr(std::min(f.find_first_not_of('-'), f.size()));
  };
  const std::string_view typed = name(unknown);
  if (typed.size() < 2) return "";
  const size_t limit = std::min<size_t>(3, std::max<size_t>(1, typed.size() / 3));
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& flag : known) {
    if (name(flag).size() < 2) continue;
    const size_t distance = edit_distance(typed, name(flag));
    if (distance < best_distance) {
      best = flag;
      best_distance = distance;
    }
  }
  return best;
}

// " (see --help)" or "; did you mean --max-tokens? (see --help)": the tail of an unknown
// option's message.
inline std::string suggestion(std::string_view unknown, const std::vector<std::string>& known) {
  const std::string flag = closest_flag(unknown, known);
  return flag.empty() ? " (see --help)" : "; did you mean " + flag + "? (see --help)";
}

}  // namespace gptoss_flags
