#include "experiments/sweep/cell_summary.hpp"

#include <cmath>

namespace specdec::sweep {

double t_quantile_975(int df) {
  // Exact to three decimals up to 30 degrees of freedom; beyond, the Cornish-Fisher expansion
  // around the normal quantile (error < 1e-4 for df > 30).
  static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                 2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df <= 30) return table[df < 1 ? 0 : df - 1];
  const double z = 1.959964, n = df;
  return z + (z * z * z + z) / (4 * n) + (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * n * n);
}

MeanCI mean_ci(const std::vector<double>& v) {
  MeanCI r;
  r.n = static_cast<int>(v.size());
  if (v.empty()) return r;
  double sum = 0;
  for (double x : v) sum += x;
  r.mean = sum / r.n;
  r.ci_low = r.ci_high = r.mean;
  if (r.n < 2) return r;
  double ss = 0;
  for (double x : v) ss += (x - r.mean) * (x - r.mean);
  r.sd = std::sqrt(ss / (r.n - 1));
  const double half = t_quantile_975(r.n - 1) * r.sd / std::sqrt(static_cast<double>(r.n));
  r.ci_low = r.mean - half;
  r.ci_high = r.mean + half;
  return r;
}

}  // namespace specdec::sweep
