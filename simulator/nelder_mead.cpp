#include "simulator/nelder_mead.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace specdec::sim {

MinimizeResult nelder_mead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x0,
                           double step, int max_evaluations, int restarts, double tolerance) {
  const size_t n = x0.size();
  MinimizeResult best{x0, f(x0), 1};
  if (n == 0) return best;
  for (int round = 0; round <= restarts && best.evaluations < max_evaluations; ++round) {
    std::vector<std::vector<double>> pts(n + 1, best.x);
    std::vector<double> val(n + 1, best.value);
    for (size_t i = 0; i < n; ++i) {
      pts[i + 1][i] += step;
      val[i + 1] = f(pts[i + 1]);
      ++best.evaluations;
    }
    std::vector<size_t> order(n + 1);
    while (best.evaluations < max_evaluations) {
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return val[a] < val[b]; });
      const size_t lo = order[0], hi = order[n], second = order[n - 1];
      if (std::fabs(val[hi] - val[lo]) <= tolerance * (std::fabs(val[lo]) + tolerance)) break;
      std::vector<double> centroid(n, 0.0);
      for (size_t i = 0; i <= n; ++i)
        if (i != hi)
          for (size_t d = 0; d < n; ++d) centroid[d] += pts[i][d] / double(n);
      auto along = [&](double t) {
        std::vector<double> x(n);
        for (size_t d = 0; d < n; ++d) x[d] = centroid[d] + t * (pts[hi][d] - centroid[d]);
        return x;
      };
      auto xr = along(-1.0);
      const double fr = f(xr);
      ++best.evaluations;
      if (fr < val[lo]) {
        auto xe = along(-2.0);
        const double fe = f(xe);
        ++best.evaluations;
        if (fe < fr) {
          pts[hi] = xe;
          val[hi] = fe;
        } else {
          pts[hi] = xr;
          val[hi] = fr;
        }
      } else if (fr < val[second]) {
        pts[hi] = xr;
        val[hi] = fr;
      } else {
        auto xc = fr < val[hi] ? along(-0.5) : along(0.5);
        const double fc = f(xc);
        ++best.evaluations;
        if (fc < std::min(fr, val[hi])) {
          pts[hi] = xc;
          val[hi] = fc;
        } else {
          for (size_t i = 0; i <= n; ++i) {
            if (i == lo) continue;
            for (size_t d = 0; d < n; ++d) pts[i][d] = pts[lo][d] + 0.5 * (pts[i][d] - pts[lo][d]);
            val[i] = f(pts[i]);
            ++best.evaluations;
          }
        }
      }
    }
    const size_t lo = std::min_element(val.begin(), val.end()) - val.begin();
    if (val[lo] <= best.value) {
      best.x = pts[lo];
      best.value = val[lo];
    }
    step *= 0.5;
  }
  return best;
}

}  // namespace specdec::sim
