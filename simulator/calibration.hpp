#pragma once
// Calibration: fit a hardware spec's efficiency terms and an engine's overhead terms to measured
// step timings and report predicted vs measured per configuration. Only those terms move;
// shapes, peaks and acceptance lengths are taken as given.
//
// Measured timings come as JSON or CSV (format in docs/simulator.md):
//   JSON {"hardware": name, "engine": name?, "source": ..., "fit": [params]?, "defaults": {row fields},
//         "rows": [{"label"?, "source"?, "model", "drafter"?, "method", "k"?, "batch"?, "prompt_len"?,
//                   "output_len"?, "context"?, "tp"?, "dtype"?, "acceptance_length"?,
//                   "step_ms" | "tpot_ms"}]}
//   CSV  header naming any of those row fields; one configuration per line.
#include <filesystem>
#include <string>
#include <vector>

#include "simulator/hardware_spec.hpp"
#include "simulator/predictor.hpp"
#include "simulator/spec_library.hpp"

namespace specdec::sim {

struct MeasuredConfig {
  std::string label;
  std::string source;         // where this row's measurement comes from (empty: the set's source)
  Scenario scenario;          // hardware filled in at fit time
  double context = 0;         // cached tokens during the measured steps
  double tokens_per_step = 1; // AL (1 for sequential)
  double measured_step_s = 0; // one decoding step (draft + verify + overheads)
  bool given_as_tpot = false; // the file gave TPOT; reports use TPOT then
};

// What a calibration moves: the device's terms and the engine's.
struct Platform {
  HardwareSpec hardware;
  EngineSpec engine;
};

struct CalibrationSet {
  std::string source;
  std::string hardware;            // name or path from the file (may be empty for CSV)
  std::string engine;              // name or path; empty = the hardware kind's default engine
  std::vector<std::string> fit;    // parameter names; empty = defaults for the data
  std::vector<MeasuredConfig> rows;
};

// Parameter names. Hardware: "compute_efficiency", "memory_efficiency", "interconnect_efficiency",
// "kernel_floor_s", "comm_latency_s", "overlap_exponent". Engine: "step_overhead_s", "request_overhead_s",
// "kernel_launch_s", "sampling_s_per_row", "sampling_saturation_rows", "tree_step_s", "tree_level_s",
// "tree_node_s", "draft_step_overhead_s.<method>",
// "spec_step_overhead_s.<method>". The host terms of a release (step, request, sampling, draft and
// spec step overheads) take a scope, "<name>@<engine version>": the term of the engine's host_work
// range holding that version, which prices that range's releases alone; unscoped, the engine's own
// (its fallback for every release without a term of its own; request_overhead_s: the current
// release's). The defaults scope every host term to the rows' releases (release_scopes).
std::vector<std::string> default_fit_parameters(const CalibrationSet& set, const EngineSpec& engine = {});
bool is_engine_parameter(const std::string& name);
// "engine" and "hardware" in a parameter list stand for the defaults of that side (so a second set
// on already fitted hardware can fit its engine alone: --fit engine); other names pass through.
std::vector<std::string> expand_fit_groups(const std::vector<std::string>& params, const CalibrationSet& set,
                                           const EngineSpec& engine);
double get_parameter(const Platform& p, const std::string& name);
void set_parameter(Platform& p, const std::string& name, double value);

CalibrationSet load_calibration_set(const std::filesystem::path& path, const SpecLibrary& specs);
CalibrationSet parse_calibration_json(const nlohmann::json& j, const std::string& source, const SpecLibrary& specs);
CalibrationSet parse_calibration_csv(const std::string& text, const std::string& source, const SpecLibrary& specs);

// Several sets on one platform as one: each row keeps its source (its file's when it names none),
// so cross-validation leaves one source out. The sets must name the same hardware and engine
// (or none); `fit` lists are joined.
CalibrationSet merge_calibration_sets(const std::vector<CalibrationSet>& sets);

double predicted_step_s(const MeasuredConfig& row, const Platform& p);

struct CalibrationRowResult {
  std::string label;
  double measured_s = 0;   // TPOT if the file gave TPOT, else step time
  double predicted_s = 0;
  double relative_error = 0;  // (predicted − measured) / measured
};

struct CalibrationResult {
  HardwareSpec hardware;  // with fitted terms
  EngineSpec engine;      // with fitted terms
  std::vector<std::string> parameters;
  std::vector<double> before, after;  // parameter values
  std::vector<CalibrationRowResult> rows;
  double max_abs_error = 0;
  double rms_log_error = 0;
};

// Fits `params` (default_fit_parameters when empty) by minimising the mean squared log error of
// the step times, with a weak pull towards the starting values so that terms the data cannot
// separate stay where the spec put them.
CalibrationResult calibrate(const CalibrationSet& set, const Platform& start, std::vector<std::string> params = {});
// Predicted vs measured without fitting.
CalibrationResult evaluate_calibration(const CalibrationSet& set, const Platform& p);

// Held-out error: fit on all rows but one group, predict the group, for every group. Groups are
// the rows' sources when they name more than one (leave one source out), else single rows
// (leave one out). The fitted parameters are `params` (default: each fold's defaults).
struct CrossValidationFold {
  std::string held_out;                      // the source, or the row's label
  std::vector<CalibrationRowResult> rows;    // the held-out rows, predicted by the other rows' fit
};
struct CrossValidation {
  std::string grouping;  // "source" or "row"
  std::vector<CrossValidationFold> folds;
  double max_abs_error = 0;  // over every held-out row
  double rms_log_error = 0;
};
CrossValidation cross_validate(const CalibrationSet& set, const Platform& start, std::vector<std::string> params = {});
// The set's hardware and engine from the library (`hardware`/`engine` override the file's).
Platform platform_for(const CalibrationSet& set, const SpecLibrary& specs, const std::string& hardware = "",
                      const std::string& engine = "");

}  // namespace specdec::sim
