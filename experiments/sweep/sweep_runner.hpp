#pragma once
// Executes the runs of a sweep spec that a results directory does not hold yet: each (cell,
// prompt) is decoded `repeats` times with the method code of `specdec generate`, and its row
// (configuration, acceptance, counts, median wall times, optionally the simulator's prediction
// re-costed from the run's own accepted lengths) is appended as soon as it is finished.
#include <filesystem>

#include <ostream>
#include "experiments/sweep/sweep_spec.hpp"

namespace specdec::sweep {

struct SweepRunOptions {
  std::filesystem::path out;
  Shard shard;
  double progress_interval_s = 30;
};

// Returns the exit code (0 when every run of the shard is in the results).
int run_sweep_spec(const SweepSpec& spec, const SweepRunOptions& options, std::ostream& log, bool log_is_terminal);

// Joins complete shard directories of one sweep into `out` (rows in run order, and the summary).
void merge_sweep_shards(const std::vector<std::filesystem::path>& shards, const std::filesystem::path& out, std::ostream& log);

}  // namespace specdec::sweep
