#pragma once
// Summary statistics over the prompts of a cell: mean, sample standard deviation and the 95%
// confidence interval of the mean (Student's t with n − 1 degrees of freedom).
#include <vector>

namespace specdec::sweep {

struct MeanCI {
  int n = 0;
  double mean = 0, sd = 0;
  double ci_low = 0, ci_high = 0;  // equal to the mean when n < 2 (no spread to estimate)
};

MeanCI mean_ci(const std::vector<double>& values);

// The 0.975 quantile of Student's t with `df` degrees of freedom (df >= 1).
double t_quantile_975(int df);

}  // namespace specdec::sweep
