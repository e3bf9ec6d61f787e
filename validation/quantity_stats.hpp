#pragma once
// The quantities validate measures under the tolerance policy (their names, rules and bounds,
// in report order) and the worst value of each, kept per step so that a step compared again in a
// rerun replaces its earlier figures instead of counting twice.
#include <map>
#include <string>
#include <vector>

#include "validation/tolerance_policy.hpp"
#include "validation/validation_report.hpp"

namespace specdec::validation {

class QuantityStats {
 public:
  // Forgets step `step` before it is compared again; a step whose target logits were forced
  // keeps their figures from the run that measured them (the forced rows are the recorded side's).
  void clear_step(int step, bool keep_target_logits);
  // One measurement of `quantity` (a name of the table) at step `step`, `at` saying where.
  void add(const std::string& quantity, int step, double value, const std::string& at);
  // Every measured quantity, in report order, with its worst value against its bound.
  std::vector<QuantitySummary> summary(const TolerancePolicy& policy) const;
  // What became of step `step`'s candidate drafter rows (recorded is not kept: the caller's).
  void drafter_rows(int step, const DrafterRowCounts& counts) { drafter_rows_[step] = counts; }
  // Summed over the steps compared.
  DrafterRowCounts drafter_rows() const;

 private:
  struct Entry {
    double worst = 0;
    std::string at;
    std::vector<double> values;  // every measurement, to count those within the bound
  };
  std::map<std::string, std::map<int, Entry>> data_;
  std::map<int, DrafterRowCounts> drafter_rows_;
};

}  // namespace specdec::validation
