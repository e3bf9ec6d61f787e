#include "python/bindings/simulate_sweep.hpp"

#include <optional>
#include <string>
#include <vector>

#include "python/bindings/conversions.hpp"
#include "python/bindings/keyword_values.hpp"
#include "reference/core/error.hpp"
#include "simulator/sweep.hpp"
#include "simulator/sweep_options.hpp"

namespace specdec::python {

namespace {

using namespace specdec::sim;

// The keywords of simulate_sweep (after model and hardware) as its signature shows them: the
// defaults are SweepOptions' (the command line's).
const std::vector<KeywordDoc> kSweepKeywords = {
    {"drafter", "list | str", "None"},
    {"k", "list | int", "4"},
    {"alphas", "list | float", "[0.8]"},
    {"batch", "list | int", "1"},
    {"tp", "list | int", "1"},
    {"dp_attention", "list | int", "1"},
    {"ep", "list | int", "1"},
    {"prompt_len", "list | int", "512"},
    {"output_len", "list | int", "256"},
    {"engine", "str", "None"},
    {"engine_version", "str", "None"},
    {"dtype", "str", "None"},
    {"any_target", "bool", "False"},
    {"acceptance", "list", "None"},
    {"acceptance_table", "dict", "None"},
    {"acceptance_by_depth", "list", "None"},
    {"synthetic_al", "float", "None"},
    {"tree_acceptance", "list | str", "None"},
    {"trace", "str", "None"},
    {"out", "str", "None"},
    {"specs_dirs", "list", "[]"},
};

py::object simulate_sweep(const py::object& model, const py::object& hardware, const py::kwargs& kw) {
  check_keywords("simulate_sweep", kw, kSweepKeywords);
  auto given = [&](const char* name) -> std::optional<py::object> {
    if (!kw.contains(name) || kw[name].is_none()) return std::nullopt;
    return py::reinterpret_borrow<py::object>(kw[name]);
  };
  SweepOptions o;
  o.models = text_list(model, "model");
  o.hardware = text_list(hardware, "hardware");
  if (auto x = given("drafter")) o.drafters = text_list(*x, "drafter");
  if (auto x = given("k")) o.ks = integer_list(*x, "k");
  if (auto x = given("alphas")) o.alphas = numbers(*x, "alphas");
  if (auto x = given("batch")) o.batches = integer_list(*x, "batch");
  if (auto x = given("tp")) o.tps = integer_list(*x, "tp");
  if (auto x = given("dp_attention")) o.dp_attentions = integer_list(*x, "dp_attention");
  if (auto x = given("ep")) o.eps = integer_list(*x, "ep");
  if (auto x = given("prompt_len")) o.prompt_lens = integer_list(*x, "prompt_len");
  if (auto x = given("output_len")) o.output_lens = integer_list(*x, "output_len");
  if (auto x = given("engine")) o.engine = text(*x, "engine");
  if (auto x = given("engine_version")) o.engine_version = text(*x, "engine_version");
  if (auto x = given("dtype")) o.dtype = text(*x, "dtype");
  if (auto x = given("any_target")) o.any_target = truth(*x);
  ScenarioOptions& a = o.scenario;
  if (auto x = given("acceptance")) a.acceptance = number_list(*x, "acceptance");
  if (auto x = given("acceptance_table")) a.acceptance_table = al_by_k(*x, "acceptance_table");
  if (auto x = given("acceptance_by_depth")) a.acceptance_by_depth = number_list(*x, "acceptance_by_depth");
  if (auto x = given("synthetic_al")) a.synthetic_al = number(*x, "synthetic_al");
  if (auto x = given("tree_acceptance"))
    a.tree_acceptance = json_text(*x, "tree_acceptance", "per-depth lists of per-rank probabilities or a JSON file");
  if (auto x = given("trace")) a.trace = path_text(*x, "trace");
  std::optional<std::string> out;
  if (auto x = given("out")) out = path_text(*x, "out");
  const SpecLibrary specs = spec_library(kw);

  const SweepSpec spec = sweep_spec_from_options(o, kKeywordSpelling);
  if (out) check_sweep_output(*out, "out");
  nlohmann::json result;
  {
    py::gil_scoped_release unlocked;
    std::vector<SweepRow> rows;
    const SweepSummary sum = run_sweep(spec, specs, [&](const SweepRow& r) { rows.push_back(r); }, kKeywordSpelling);
    if (out) write_sweep(*out, rows);
    result = sweep_json(rows, sum);
  }
  return json_to_python(result);
}

const char* const kSweepDoc = R"(
Predicts every combination of hardware x model x drafter x K x acceptance x batch x TP x layout x prompt and
output length, as `specdec simulate --sweep OUT` does. model, hardware, drafter: spec names or paths, each a
name or a list (drafter 'none': sequential decoding; default none); k, batch, tp, prompt_len, output_len: an
int or a list; dp_attention, ep: the layouts over each TP's devices, each an int or a list (as --dp-attention
and --ep; combinations the engines do not run are skipped with their reason); alphas: i.i.d. acceptance rates, a number or a list, unless one acceptance model is given instead
(acceptance, acceptance_table, acceptance_by_depth, synthetic_al, tree_acceptance or trace, as in
specdec.simulate). A head whose spec names its target is priced on that model only unless any_target=True.
engine, engine_version, dtype: for every combination; specs_dirs: extra spec directories.
Returns {'columns': the CSV's columns in order, 'rows': one dict per predicted combination with those
columns (k, batch, tp and the lengths ints, fits_memory a bool; sequential rows once, k = 0, alpha = 0),
'scenarios': the number predicted, 'skipped': the number of invalid combinations, 'skip_reasons': the
first few distinct reasons}. out: also write the rows to a .csv, .h5 or .hdf5 file, the file the command
line writes. Errors name the keyword.)";

}  // namespace

void bind_simulate_sweep(py::module_& mod) {
  py::options opts;
  opts.disable_function_signatures();
  static const std::string doc =
      signature_line("simulate_sweep", "model: list | str, hardware: list | str", kSweepKeywords) + "\n" + kSweepDoc;
  mod.def("simulate_sweep", &simulate_sweep, py::arg("model"), py::arg("hardware"), doc.c_str());
}

}  // namespace specdec::python
