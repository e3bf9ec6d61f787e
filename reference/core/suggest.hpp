#pragma once
// "Did you mean ...?" for names a user typed: the closest known name by edit distance, when it is
// close enough to be a typo (at most a third of the word's letters changed, and at least one).
#include <algorithm>
#include <string>
#include <vector>

namespace specdec {

// Levenshtein distance with transpositions counted as one edit (optimal string alignment).
inline int edit_distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

// The known name closest to `given`, or "" when none is within typo distance. Names longer than
// 64 characters are never typos of a known one (and are not compared: the table is quadratic).
inline std::string closest_name(const std::string& given, const std::vector<std::string>& known) {
  if (given.empty() || given.size() > 64) return "";
  std::string best;
  int best_d = std::max(1, static_cast<int>(given.size()) / 3) + 1;
  for (const std::string& k : known) {
    const int d = edit_distance(given, k);
    if (d < best_d) best_d = d, best = k;
  }
  return best;
}

// "; did you mean eagle3?" or "".
inline std::string did_you_mean(const std::string& given, const std::vector<std::string>& known) {
  const std::string c = closest_name(given, known);
  return c.empty() ? "" : "; did you mean " + c + "?";
}

}  // namespace specdec
