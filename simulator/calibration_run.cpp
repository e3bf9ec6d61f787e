#include "simulator/calibration_run.hpp"

#include "reference/core/error.hpp"
#include "reference/io/atomic_file.hpp"
#include "simulator/engine_spec.hpp"
#include "simulator/hardware_spec.hpp"
#include "simulator/method.hpp"
#include "simulator/trace_replay.hpp"

namespace specdec::sim {

CalibrationRun run_calibration(const CalibrationOptions& o, const SpecLibrary& specs, const OptionSpelling& sp) {
  const std::string measured = sp("calibrate"), traced = sp("calibrate-traces");
  if (!o.measured.empty() && !o.traces.empty())
    throw Error("give either " + measured + " (measured step timings, JSON or CSV) or " + traced + " (recorded traces), not both");
  if (o.measured.empty() && o.traces.empty())
    throw Error("give " + measured + " (measured step timings, JSON or CSV) or " + traced + " (recorded traces): no file given");
  CalibrationRun r;
  const bool traces = !o.traces.empty();
  if (traces) {
    std::vector<std::filesystem::path> files(o.traces.begin(), o.traces.end());
    r.set = calibration_set_from_traces(files);
  } else {
    std::vector<CalibrationSet> sets;
    for (const auto& f : o.measured) sets.push_back(load_calibration_set(f, specs));
    r.set = merge_calibration_sets(sets);
  }
  const std::string hw = o.hardware.value_or(r.set.hardware);
  if (hw.empty()) {
    if (traces)
      throw Error(traced + " needs " + sp("hardware") + " (a spec name or a hardware JSON, e.g. one `specdec simulate " +
                  "--measure-cpu` wrote)");
    std::string files;
    for (const auto& f : o.measured) files += (files.empty() ? "" : ",") + f;
    throw Error(files + ": no hardware named in the file; give " + sp("hardware"));
  }
  r.start = platform_for(r.set, specs, hw, o.engine.value_or(""));
  r.before = evaluate_calibration(r.set, r.start);
  r.fitted = calibrate(r.set, r.start, o.fit);
  if (o.cross_validate) r.cross_validation = cross_validate(r.set, r.start, o.fit);
  return r;
}

nlohmann::json calibration_json(const CalibrationRun& run) {
  const CalibrationSet& set = run.set;
  const CalibrationResult& before = run.before;
  const CalibrationResult& r = run.fitted;
  nlohmann::json j;
  if (run.cross_validation) {
    const CrossValidation& cv = *run.cross_validation;
    j["cross_validation"] = {{"grouping", cv.grouping}, {"max_abs_relative_error", cv.max_abs_error}, {"rms_log_error", cv.rms_log_error}};
    for (const auto& f : cv.folds)
      for (const auto& row : f.rows)
        j["cross_validation"]["held_out"].push_back({{"fold", f.held_out}, {"label", row.label},
                                                     {"measured_ms", row.measured_s * 1e3},
                                                     {"predicted_ms", row.predicted_s * 1e3},
                                                     {"relative_error", row.relative_error}});
  }
  j["hardware"] = hardware_spec_to_json(r.hardware);
  j["engine"] = engine_spec_to_json(r.engine);
  for (size_t i = 0; i < r.parameters.size(); ++i) j["parameters"][r.parameters[i]] = {{"before", r.before[i]}, {"after", r.after[i]}};
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const Scenario& sc = set.rows[i].scenario;
    j["rows"].push_back({{"label", r.rows[i].label}, {"method", method_name(sc.plan.method)},
                         {"k", sc.plan.method == Method::sequential ? 0 : sc.plan.k},
                         {"acceptance_length", set.rows[i].tokens_per_step}, {"context", set.rows[i].context},
                         {"measured_ms", r.rows[i].measured_s * 1e3},
                         {"predicted_before_ms", before.rows[i].predicted_s * 1e3},
                         {"relative_error_before", before.rows[i].relative_error},
                         {"predicted_ms", r.rows[i].predicted_s * 1e3}, {"relative_error", r.rows[i].relative_error}});
  }
  j["max_abs_relative_error_before"] = before.max_abs_error;
  j["max_abs_relative_error"] = r.max_abs_error;
  return j;
}

void write_calibrated_hardware(const CalibrationRun& r, const std::filesystem::path& path, const std::string& fitted_by) {
  const std::string fitted = "fitted by " + fitted_by + " to " + r.set.source;
  const nlohmann::json sources = {{"efficiency", fitted}, {"roofline", fitted}, {"overhead", fitted}};
  specdec::write_file_atomically(path, hardware_spec_to_json(r.fitted.hardware, sources).dump(2) + "\n");
}

void write_calibrated_engine(const CalibrationRun& r, const std::filesystem::path& path, const std::string& fitted_by) {
  const std::string fitted = "fitted by " + fitted_by + " to " + r.set.source;
  const nlohmann::json sources = {{"overhead", fitted}, {"kernels", fitted}};
  specdec::write_file_atomically(path, engine_spec_to_json(r.fitted.engine, sources).dump(2) + "\n");
}

}  // namespace specdec::sim
