#pragma once
// `specdec simulate --calibrate` / `--calibrate-traces` and Python's specdec.calibrate: the measured
// sets (or traces) read and merged, the platform they are fitted on, the fit beside the specs'
// unfitted predictions, the optional held-out errors, the JSON both return and the fitted spec
// files. Errors name options as the caller spells them.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "simulator/calibration.hpp"
#include "simulator/option_spelling.hpp"
#include "simulator/spec_library.hpp"

namespace specdec::sim {

struct CalibrationOptions {
  std::vector<std::string> measured;  // calibration sets, JSON or CSV (several: one platform)
  std::vector<std::string> traces;    // or recorded traces with step timings (needs `hardware`)
  std::optional<std::string> hardware, engine;  // override the sets' (names or paths)
  std::vector<std::string> fit;       // parameters fitted; empty: the defaults for the data
  bool cross_validate = false;        // also fit without each source (or row) and predict it
};

struct CalibrationRun {
  CalibrationSet set;
  Platform start;                     // the specs before fitting
  CalibrationResult before;           // the specs' predictions, unfitted
  CalibrationResult fitted;
  std::optional<CrossValidation> cross_validation;
};

// Reads, checks and fits (one of measured and traces, the hardware named by the set or the
// options).
CalibrationRun run_calibration(const CalibrationOptions& o, const SpecLibrary& specs, const OptionSpelling& spelling);

// `--json`'s answer: "parameters" {name: {"before", "after"}}, "rows" (label, method, k,
// acceptance_length, context, measured_ms, predicted_before_ms, relative_error_before,
// predicted_ms, relative_error), "max_abs_relative_error_before", "max_abs_relative_error",
// "hardware" and "engine" (the fitted specs) and, when cross-validated, "cross_validation"
// (grouping, max_abs_relative_error, rms_log_error, held_out rows).
nlohmann::json calibration_json(const CalibrationRun& r);

// The fitted hardware and engine specs as files, each fitted term's source "fitted by <fitted_by>
// to <the set's source>" (written atomically).
void write_calibrated_hardware(const CalibrationRun& r, const std::filesystem::path& path, const std::string& fitted_by);
void write_calibrated_engine(const CalibrationRun& r, const std::filesystem::path& path, const std::string& fitted_by);

}  // namespace specdec::sim
