#pragma once
// Independent evaluation: predict published speedups that no calibration has seen.
//
// An evaluation set is a JSON file of published results, each a configuration (target, drafter,
// method, K or tree, batch, hardware, engine), the AL the source measured and the speedup it
// reported over its own plain decoding. The simulator predicts each speedup from the specs alone
// (the measured AL is given, not modelled) and reports the error. Sets are marked
// `"reserved": true`, and the calibration loader refuses such a file, so reserved results can be
// evaluated but never fitted. Format (docs/simulator.md):
//   {"source": ..., "reserved": true, "hardware": name?, "engine": name?, "defaults": {row fields},
//    "rows": [{"label"?, "model", "drafter"?, "method"?, "k"? | "tree"? | "dynamic_tree"? [N, D, K],
//              "batch"?, "prompt_len"?, "output_len"?, "tp"?, "dtype"?, "hardware"?, "engine"?,
//              "acceptance_length", "speedup" | ("throughput" and "baseline_throughput"),
//              "versus"? {"method", "drafter", "k" | "tree" | "dynamic_tree", "acceptance_length"},
//              "quote"?, "missing_spec"?}]}
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/option_spelling.hpp"
#include "simulator/predictor.hpp"
#include "simulator/spec_library.hpp"

namespace specdec::sim {

struct PublishedResult {
  std::string label;
  Scenario scenario;             // measured_tokens_per_step holds the published AL
  double published_speedup = 0;  // over the source's own plain decoding of the same workload
  // When set, the published speedup is over this speculative configuration instead (e.g. P-EAGLE
  // over EAGLE-3): same target, platform and workload, its own plan and measured AL.
  std::optional<Scenario> versus;
};

// A row that names something the library has no spec for is kept out of the error and listed.
struct SkippedResult {
  std::string label;
  std::string reason;
};

struct EvaluationSet {
  std::string name;    // the file's stem
  std::string source;
  bool reserved = false;
  std::vector<PublishedResult> rows;
  std::vector<SkippedResult> skipped;
};

// `hardware` / `engine` (names or paths), when given, replace every row's: e.g. specs fitted by
// `specdec simulate --calibrate` on other data. A row without hardware is an error naming the
// hardware option as `spelling` writes it.
EvaluationSet parse_evaluation_json(const nlohmann::json& j, const std::string& source, const SpecLibrary& specs,
                                    const std::string& hardware = "", const std::string& engine = "",
                                    const OptionSpelling& spelling = kCommandLineSpelling);
EvaluationSet load_evaluation_set(const std::filesystem::path& path, const SpecLibrary& specs,
                                  const std::string& hardware = "", const std::string& engine = "",
                                  const OptionSpelling& spelling = kCommandLineSpelling);
// Every *.json in a directory (sorted by name), or the one file.
std::vector<EvaluationSet> load_evaluation_sets(const std::filesystem::path& path, const SpecLibrary& specs,
                                                const std::string& hardware = "", const std::string& engine = "",
                                                const OptionSpelling& spelling = kCommandLineSpelling);

struct EvaluationRowResult {
  std::string label;
  std::string hardware, engine;
  double acceptance_length = 1;
  double published_speedup = 0;
  double predicted_speedup = 0;
  double relative_error = 0;  // (predicted − published) / published
};

struct EvaluationResult {
  std::string name;
  std::string source;
  std::vector<EvaluationRowResult> rows;
  std::vector<SkippedResult> skipped;
  double max_abs_error = 0;
  double mean_error = 0;      // signed (the bias): > 0 means the simulator predicts too much speedup
  double mean_abs_error = 0;  // the mean of |error|: how far off a single prediction is on average
  double rms_log_error = 0;
};

EvaluationResult evaluate_published(const EvaluationSet& set);
// Pools the rows of several results (the summary of a whole evaluation directory).
EvaluationResult pool_evaluations(const std::vector<EvaluationResult>& results);

// `specdec simulate --evaluate PATH` and Python's specdec.evaluate: every set at `path` (a file, or
// each *.json of a directory) evaluated, and all of their rows pooled.
struct Evaluation {
  std::vector<EvaluationResult> sets;
  EvaluationResult all;
};
Evaluation evaluate_published_path(const std::filesystem::path& path, const SpecLibrary& specs, const std::string& hardware,
                                   const std::string& engine, const OptionSpelling& spelling);
// `--json`'s answer: "sets" (per set: set, source, results, max_abs_relative_error,
// mean_relative_error, mean_abs_relative_error, rms_log_error, "rows" and "skipped") and "all" (the
// pooled summary).
nlohmann::json evaluation_json(const Evaluation& e);

}  // namespace specdec::sim
