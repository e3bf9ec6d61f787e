#pragma once
// Schema check of a trace file (specdec trace check): everything traces/SCHEMA.md requires,
// reported as a list of every problem found rather than the first error. For engines outside
// specdec that write traces themselves (e.g. python/specdec/trace_writer.py).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "traces/batched_trace.hpp"
#include "traces/trace.hpp"

namespace specdec {

struct TraceProblem {
  std::string where;  // the HDF5 object ("/steps/positions") or attribute ("/ @schema_version")
  std::string what;   // what is wrong and what was expected
};

struct TraceCheckResult {
  bool opened = false;        // false: not HDF5 or not openable at all (then `problems` holds why)
  std::string schema_version; // as found, or empty
  long steps = -1;            // number of steps (of all sequences), when it could be determined
  long sequences = -1;        // a batched (2.x) file: its number of sequences; -1 for a 1.x file
  std::vector<TraceProblem> problems;
  bool valid() const { return opened && problems.empty(); }
};

// Never throws for a bad file; a file that crashes or hangs libhdf5 is read in a contained
// child process first (traces/contained_read.hpp) and reported as a problem.
TraceCheckResult check_trace_file(const std::filesystem::path& path);

// A trace file as the tools that compare traces load it (specdec validate --trace / --candidate,
// specdec trace diff): every check of check_trace_file, then read. A file with any problem is
// refused with a specdec::Error naming the file, the first problem (where and what) and how many
// more there are, so that those tools never compare what `specdec trace check` rejects.
struct CheckedTraceFile {
  std::optional<Trace> trace;         // a one-sequence (1.x) file
  std::optional<BatchedTrace> batch;  // a batched (2.x) file
};
CheckedTraceFile read_checked_trace_file(const std::filesystem::path& path);
// The same for where one sequence's trace is expected: a batched file is refused as such.
Trace read_checked_trace(const std::filesystem::path& path);

// The run-configuration keys of /meta/config_json and /meta/config_json "method", as checked.
struct ConfigKey {
  const char* key;
  const char* type;  // "object", "string", "integer", "boolean"
  bool required;     // required always (for "method": see `speculative_only`)
  const char* meaning;
};
const std::vector<ConfigKey>& run_config_keys();
const std::vector<ConfigKey>& method_config_keys();
const std::vector<ConfigKey>& sampling_config_keys();

}  // namespace specdec
