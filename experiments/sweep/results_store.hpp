#pragma once
// A sweep's results directory: manifest.json (what the results are of: the spec, its cells and
// prompts, the shard), rows.jsonl (one line per finished run, appended as it finishes) and, once
// every run is in, summary.json / summary.csv. Appends are single write(2)s of whole lines
// followed by fsync, so a process killed at any moment leaves every finished row intact; a torn
// last line (a crash inside the write, e.g. a power loss) is dropped when the sweep resumes.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/sweep/sweep_spec.hpp"

namespace specdec::sweep {

// What identifies a sweep's results: the spec as read, the cells and prompts it expands to (a
// prompt by set, id, category and a hash of its text) and the shard.
nlohmann::json make_manifest(const SweepSpec& spec, const Shard& shard);

// Refuses a `dir` that is not a results directory: a file, or a directory holding other things
// and no manifest (only a sweep's lock file may be there). A missing one is fine.
void check_results_dir(const std::filesystem::path& dir);

// Creates `dir` with `manifest`, or checks that the manifest already there equals it. A
// different one (the spec changed since the results were started) is refused with an error
// naming the fields that differ.
void open_results_dir(const std::filesystem::path& dir, const nlohmann::json& manifest);
nlohmann::json read_manifest(const std::filesystem::path& dir);

// The rows of rows.jsonl, in file order. With `repair`, a torn last line (no newline) is cut off
// the file; without, it is ignored. A complete line that is not a JSON object is an error naming
// the file and line number.
std::vector<nlohmann::json> read_rows(const std::filesystem::path& dir, bool repair);

class RowWriter {
 public:
  explicit RowWriter(const std::filesystem::path& dir);
  ~RowWriter();
  RowWriter(const RowWriter&) = delete;
  RowWriter& operator=(const RowWriter&) = delete;
  // Appends the row as one line and flushes it to the disk.
  void append(const nlohmann::json& row);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

// Writes summary.json and summary.csv of `rows` (each a finished run of `manifest`) atomically,
// and returns the summary.
nlohmann::json write_summary(const std::filesystem::path& dir, const nlohmann::json& manifest, const std::vector<nlohmann::json>& rows);

// A warning for the summary's groups with fewer than kFewPrompts prompts (cell_summary.hpp): how
// many, the smallest n, what that means for their intervals; empty when there are none.
std::string small_sample_warning(const nlohmann::json& summary);

// The rows without what is measured rather than computed (wall times, tokens/s): two sweeps of the
// same spec give equal deterministic rows.
nlohmann::json deterministic_part(const nlohmann::json& row);

}  // namespace specdec::sweep
