#pragma once
// A deterministic Nelder–Mead minimiser for the few (≤ ~12) calibration parameters, which makes
// no assumption about the objective's smoothness (rooflines have kinks).
#include <functional>
#include <vector>

namespace specdec::sim {

struct MinimizeResult {
  std::vector<double> x;
  double value = 0;
  int evaluations = 0;
};

// Minimises f from x0 with initial simplex steps `step`; restarts from the best point `restarts`
// times (a collapsed simplex is a common failure on kinked objectives).
MinimizeResult nelder_mead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x0,
                           double step = 0.5, int max_evaluations = 20000, int restarts = 3, double tolerance = 1e-12);

}  // namespace specdec::sim
