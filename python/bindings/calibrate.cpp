#include "python/bindings/calibrate.hpp"

#include <optional>
#include <string>
#include <vector>

#include "python/bindings/conversions.hpp"
#include "python/bindings/keyword_values.hpp"
#include "reference/core/error.hpp"
#include "simulator/calibration_run.hpp"
#include "simulator/evaluation.hpp"

namespace specdec::python {

namespace {

using namespace specdec::sim;

// The command line's --calibrate and --calibrate-traces are measured= and traces= here.
const OptionSpelling kCalibrateSpelling = kKeywordSpelling.renaming({{"calibrate", "measured"}, {"calibrate-traces", "traces"}});

const std::vector<KeywordDoc> kCalibrateKeywords = {
    {"traces", "list | str", "None"},
    {"hardware", "str", "None"},
    {"engine", "str", "None"},
    {"fit", "list | str", "None"},
    {"cross_validate", "bool", "False"},
    {"output", "str", "None"},
    {"engine_output", "str", "None"},
    {"specs_dirs", "list", "[]"},
};

const std::vector<KeywordDoc> kEvaluateKeywords = {
    {"hardware", "str", "None"},
    {"engine", "str", "None"},
    {"specs_dirs", "list", "[]"},
};

std::optional<py::object> given(const py::kwargs& kw, const char* name) {
  if (!kw.contains(name) || kw[name].is_none()) return std::nullopt;
  return py::reinterpret_borrow<py::object>(kw[name]);
}

py::object calibrate(const py::object& measured, const py::kwargs& kw) {
  check_keywords("calibrate", kw, kCalibrateKeywords);
  CalibrationOptions o;
  if (!measured.is_none()) o.measured = path_list(measured, "measured");
  if (auto x = given(kw, "traces")) o.traces = path_list(*x, "traces");
  if (auto x = given(kw, "hardware")) o.hardware = name_or_path(*x, "hardware");
  if (auto x = given(kw, "engine")) o.engine = name_or_path(*x, "engine");
  if (auto x = given(kw, "fit")) o.fit = text_list(*x, "fit");
  if (auto x = given(kw, "cross_validate")) o.cross_validate = truth(*x);
  std::optional<std::string> output, engine_output;
  if (auto x = given(kw, "output")) output = path_text(*x, "output");
  if (auto x = given(kw, "engine_output")) engine_output = path_text(*x, "engine_output");
  const SpecLibrary specs = spec_library(kw);
  nlohmann::json out;
  {
    py::gil_scoped_release unlocked;
    const CalibrationRun run = run_calibration(o, specs, kCalibrateSpelling);
    if (output) write_calibrated_hardware(run, *output, "specdec.calibrate");
    if (engine_output) write_calibrated_engine(run, *engine_output, "specdec.calibrate");
    out = calibration_json(run);
  }
  return json_to_python(out);
}

py::object evaluate(const py::object& published, const py::kwargs& kw) {
  check_keywords("evaluate", kw, kEvaluateKeywords);
  const std::string path = path_text(published, "published");
  std::string hardware, engine;
  if (auto x = given(kw, "hardware")) hardware = name_or_path(*x, "hardware");
  if (auto x = given(kw, "engine")) engine = name_or_path(*x, "engine");
  const SpecLibrary specs = spec_library(kw);
  nlohmann::json out;
  {
    py::gil_scoped_release unlocked;
    out = evaluation_json(evaluate_published_path(path, specs, hardware, engine, kKeywordSpelling));
  }
  return json_to_python(out);
}

const char* const kCalibrateDoc = R"(
Fits a hardware spec's efficiency terms and an engine's overhead terms to measured step timings, as
`specdec simulate --calibrate MEASURED --json` does, and returns the same dict. measured: a calibration set
(JSON or CSV, docs/simulator.md) or a list of sets on one platform; or traces: recorded traces with step
timings (then hardware is needed). hardware, engine: spec names or paths, overriding the sets' (default:
the set's hardware and that kind's engine); fit: the parameters fitted (a list, or 'engine' / 'hardware'
for that side's defaults; default: both, as the data allows); cross_validate=True adds held-out errors
(leave one source out when the rows name several, else one row). output, engine_output: write the fitted
hardware and engine specs there, as --output and --engine-output do.
Returns 'parameters' {name: {'before', 'after'}}, 'rows' (label, method, k, acceptance_length, context,
measured_ms, predicted_before_ms, relative_error_before, predicted_ms, relative_error),
'max_abs_relative_error_before', 'max_abs_relative_error', 'hardware' and 'engine' (the fitted specs) and,
with cross_validate, 'cross_validation' (grouping, max_abs_relative_error, rms_log_error, held_out).
Errors name the keyword.)";

const char* const kEvaluateDoc = R"(
Predicts published speedups the simulator was never fitted to, as `specdec simulate --evaluate PUBLISHED
--json` does, and returns the same dict. published: an evaluation set (JSON, docs/simulator.md) or a
directory of them, e.g. simulator/evaluation; hardware, engine: spec names or paths replacing every row's
(e.g. specs written by specdec.calibrate); specs_dirs: extra spec directories. Returns 'sets' (per set:
'set', 'source', 'results', 'max_abs_relative_error', 'mean_relative_error' (the bias),
'mean_abs_relative_error', 'rms_log_error', 'rows' (label, hardware, engine, acceptance_length,
published_speedup, predicted_speedup, relative_error) and 'skipped') and 'all', the pooled summary.)";

}  // namespace

void bind_calibrate(py::module_& mod) {
  py::options opts;
  opts.disable_function_signatures();
  static const std::string calibrate_doc =
      signature_line("calibrate", "measured: list | str = None", kCalibrateKeywords) + "\n" + kCalibrateDoc;
  static const std::string evaluate_doc = signature_line("evaluate", "published: str", kEvaluateKeywords) + "\n" + kEvaluateDoc;
  mod.def("calibrate", &calibrate, py::arg("measured") = py::none(), calibrate_doc.c_str());
  mod.def("evaluate", &evaluate, py::arg("published"), evaluate_doc.c_str());
}

}  // namespace specdec::python
