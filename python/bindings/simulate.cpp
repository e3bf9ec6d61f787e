#include "python/bindings/simulate.hpp"

#include <pybind11/stl.h>

#include <climits>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "python/bindings/conversions.hpp"
#include "reference/core/error.hpp"
#include "simulator/capacity_comparison.hpp"
#include "simulator/capacity_planning.hpp"
#include "simulator/scenario_options.hpp"
#include "simulator/simulate_modes.hpp"
#include "simulator/spec_library.hpp"

namespace specdec::python {

namespace {

using namespace specdec::sim;

// Python values as the simulator's option values. Each error names the keyword; which options go
// together, and every bound, is build_scenario's to check (in the keywords' spelling).

std::string shown(const py::handle& x) { return py::repr(x).cast<std::string>(); }

bool is_number(const py::handle& x) {
  return !py::isinstance<py::str>(x) && (py::isinstance<py::float_>(x) || py::hasattr(x, "__index__") || py::hasattr(x, "__float__"));
}

double number(const py::handle& x, const std::string& name) {
  if (!is_number(x)) throw Error(name + " must be a number, got " + shown(x));
  return x.cast<double>();
}

int integer(const py::handle& x, const std::string& name) {
  if (py::isinstance<py::str>(x) || !py::hasattr(x, "__index__")) throw Error(name + " must be an integer, got " + shown(x));
  const long long v = x.cast<long long>();
  if (v > INT_MAX || v < INT_MIN) throw Error(name + ": " + std::to_string(v) + " is out of range");
  return static_cast<int>(v);
}

std::string text(const py::handle& x, const std::string& name) {
  if (!py::isinstance<py::str>(x)) throw Error(name + " must be a string, got " + shown(x));
  return x.cast<std::string>();
}

bool is_list(const py::handle& x) { return !py::isinstance<py::str>(x) && py::isinstance<py::sequence>(x); }

std::vector<double> number_list(const py::handle& x, const std::string& name) {
  if (!is_list(x)) throw Error(name + " must be a list of numbers, got " + shown(x));
  std::vector<double> v;
  for (py::handle e : x.cast<py::sequence>()) {
    if (!is_number(e)) throw Error(name + " must hold numbers, got " + shown(e));
    v.push_back(e.cast<double>());
  }
  if (v.empty()) throw Error(name + " is empty");
  return v;
}

// An integer or a list of integers.
std::vector<int> integer_list(const py::handle& x, const std::string& name) {
  if (!is_list(x)) return {integer(x, name)};
  std::vector<int> v;
  for (py::handle e : x.cast<py::sequence>()) v.push_back(integer(e, name));
  if (v.empty()) throw Error(name + " is empty");
  return v;
}

// A name or a path as it is; lists and dicts as the JSON the command line would be given.
std::string json_text(const py::handle& x, const std::string& name, const std::string& expected) {
  if (py::isinstance<py::str>(x)) return x.cast<std::string>();
  try {
    return py::module_::import("json").attr("dumps")(x).cast<std::string>();
  } catch (const py::error_already_set&) {
    throw Error(name + " must be " + expected + ", got " + shown(x));
  }
}

std::map<int, double> al_by_k(const py::handle& x, const std::string& name) {
  if (!py::isinstance<py::dict>(x)) throw Error(name + " must be a dict {K: AL}, got " + shown(x));
  std::map<int, double> t;
  for (auto [k, al] : x.cast<py::dict>()) t[integer(k, name + " (K)")] = number(al, name + " (AL)");
  return t;
}

// True: K = 1..kDefaultPlannedDepth, as capacity planning searches; N: 1..N, as `--best-k N`; a
// list: those Ks.
std::vector<int> best_ks(const py::handle& x, const std::string& name) {
  if (py::isinstance<py::bool_>(x)) return best_k_up_to(x.cast<bool>() ? kDefaultPlannedDepth : 0, kKeywordSpelling);
  if (!is_list(x)) return best_k_up_to(integer(x, name), kKeywordSpelling);
  return integer_list(x, name);
}

BestTreeGrid tree_grid(const py::handle& x, const std::string& name) {
  const std::string expected = name + " must be (total_tokens, depths, top_ks), each an integer or a list of integers";
  if (!is_list(x) || py::len(x) != 3) throw Error(expected + ", got " + shown(x));
  const py::sequence g = x.cast<py::sequence>();
  return {integer_list(g[0], name + " (total_tokens)"), integer_list(g[1], name + " (depths)"), integer_list(g[2], name + " (top_ks)")};
}

CapacityOptions& capacity(ScenarioOptions& o) {
  if (!o.capacity) o.capacity.emplace();
  return *o.capacity;
}

// A keyword of specdec.simulate and specdec.plan_capacity: its signature text and how it sets the
// options (None leaves the default).
struct Keyword {
  const char* name;
  const char* type;
  const char* simulate_default;  // nullptr: not a keyword of simulate
  const char* plan_default;      // nullptr: not a keyword of plan_capacity
  void (*set)(const py::handle& x, const std::string& name, ScenarioOptions& o);
};

// clang-format off
const Keyword kKeywords[] = {
  {"engine", "str", "None", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.engine = text(x, n); }},
  // plan_capacity also takes a list of drafters: their methods compared (read before the keywords).
  {"drafter", "str", "None", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.drafter = text(x, n); }},
  {"method", "str", "None", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.method = text(x, n); }},
  {"category", "str", "None", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.category = text(x, n); }},
  {"k", "int", "4", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.k = integer(x, n); }},
  {"best_k", "list | int | bool", "None", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) {
     if (!(py::isinstance<py::bool_>(x) && !x.cast<bool>())) o.best_k = best_ks(x, n); }},
  {"best_tree", "tuple", "None", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.best_tree = tree_grid(x, n); }},
  {"tree", "str | list", "None", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) {
     o.tree = json_text(x, n, "a tree name, a JSON file or rank paths [[0], [1], [0, 0]]"); }},
  {"dynamic_tree", "tuple", "None", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.dynamic_tree = integer_list(x, n); }},
  {"alpha", "float", "None", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.alpha = number(x, n); }},
  {"acceptance", "list", "None", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.acceptance = number_list(x, n); }},
  {"acceptance_table", "dict", "None", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.acceptance_table = al_by_k(x, n); }},
  {"acceptance_by_depth", "list", "None", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) {
     o.acceptance_by_depth = number_list(x, n); }},
  {"synthetic_al", "float", "None", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.synthetic_al = number(x, n); }},
  {"tree_acceptance", "list | str", "None", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) {
     o.tree_acceptance = json_text(x, n, "per-depth lists of per-rank probabilities or a JSON file"); }},
  {"trace", "str", "None", "None", [](const py::handle& x, const std::string&, ScenarioOptions& o) {
     o.trace = py::str(x).cast<std::string>(); }},
  {"al", "float", "None", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.al = number(x, n); }},
  {"match_rate", "float", "None", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.match_rate = number(x, n); }},
  {"batch", "int", "1", "1", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.batch = integer(x, n); }},
  {"batching", "str", "None", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.batching = text(x, n); }},
  {"tp", "int", "1", nullptr, [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.tp = integer(x, n); }},
  {"tp", "list | int", nullptr, "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { capacity(o).tp = integer_list(x, n); }},
  {"prompt_len", "int", "512", "512", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.prompt_len = integer(x, n); }},
  {"output_len", "int", "256", "256", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.output_len = integer(x, n); }},
  {"dtype", "str", "None", "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { o.dtype = text(x, n); }},
  {"capacity_rate", "float", nullptr, "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) {
     capacity(o).capacity_rate = number(x, n); }},
  {"tpot_target_ms", "float", nullptr, "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) {
     capacity(o).tpot_target_ms = number(x, n); }},
  {"ttft_target_ms", "float", nullptr, "0", [](const py::handle& x, const std::string& n, ScenarioOptions& o) {
     capacity(o).ttft_target_ms = number(x, n); }},
  {"price", "float", nullptr, "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) { capacity(o).price = number(x, n); }},
  // 0.85: kDefaultMaxUtilization, the command line's --max-utilization default.
  {"max_utilization", "float", nullptr, "0.85", [](const py::handle& x, const std::string& n, ScenarioOptions& o) {
     capacity(o).max_utilization = number(x, n); }},
  {"output_len_cv", "float", nullptr, "0", [](const py::handle& x, const std::string& n, ScenarioOptions& o) {
     capacity(o).output_len_cv = number(x, n); }},
  {"ttft_percentile", "float", nullptr, "None", [](const py::handle& x, const std::string& n, ScenarioOptions& o) {
     capacity(o).ttft_percentile = number(x, n); }},
  {"breakdown", "bool", "False", "False", [](const py::handle& x, const std::string&, ScenarioOptions& o) { o.breakdown = PyObject_IsTrue(x.ptr()) == 1; }},
  {"specs_dirs", "list", "[]", "[]", nullptr},  // read by spec_library
};
// clang-format on

// "name(model: str, hardware: str, *, engine: str = None, ...) -> dict": the first line of the
// docstring, which help() shows and specdec's keyword check reads.
std::string signature(const std::string& name, bool plan) {
  std::string s = name + "(model: str, hardware: str, *";
  for (const Keyword& k : kKeywords) {
    const char* def = plan ? k.plan_default : k.simulate_default;
    if (def) s += std::string(", ") + k.name + ": " + k.type + " = " + def;
  }
  return s + ") -> dict";
}

SpecLibrary spec_library(const py::kwargs& kw) {
  std::vector<std::filesystem::path> dirs;
  if (kw.contains("specs_dirs") && !kw["specs_dirs"].is_none()) {
    const py::object d = kw["specs_dirs"];
    if (!is_list(d)) throw Error("specs_dirs must be a list of directories, got " + shown(d));
    for (py::handle x : d.cast<py::sequence>()) {
      const std::filesystem::path p = py::str(x).cast<std::string>();
      if (!std::filesystem::is_directory(p)) throw Error("specs_dirs: '" + p.string() + "' is not a directory");
      dirs.push_back(p);
    }
  }
  return SpecLibrary(dirs);
}

ScenarioOptions options(const std::string& function, const std::string& model, const std::string& hardware, const py::kwargs& kw,
                        bool plan) {
  ScenarioOptions o;
  o.model = model;
  o.hardware = hardware;
  if (plan) o.capacity.emplace();
  for (auto [key, value] : kw) {
    const std::string name = key.cast<std::string>();
    const Keyword* found = nullptr;
    for (const Keyword& k : kKeywords)
      if (name == k.name && (plan ? k.plan_default : k.simulate_default)) found = &k;
    if (!found) throw py::type_error(function + "() got an unexpected keyword argument '" + name + "'");
    if (found->set && !value.is_none()) found->set(value, name, o);
  }
  return o;
}

py::object simulate(const std::string& model, const std::string& hardware, const py::kwargs& kw) {
  const ScenarioOptions o = options("simulate", model, hardware, kw, false);
  const SpecLibrary specs = spec_library(kw);
  const SimulateResult r = simulate_modes(o, build_scenario(o, specs, kKeywordSpelling), kKeywordSpelling);
  return json_to_python(simulate_json(r, o.breakdown));
}

py::object plan_capacity(const std::string& model, const std::string& hardware, const py::kwargs& kw) {
  // drafter=[A, B, ...]: capacity planning across their methods (simulator/capacity_comparison).
  if (kw.contains("drafter") && is_list(kw["drafter"])) {
    std::vector<std::string> drafters;
    for (py::handle x : kw["drafter"].cast<py::sequence>()) drafters.push_back(text(x, "drafter"));
    py::kwargs rest;
    for (auto [key, value] : kw)
      if (key.cast<std::string>() != "drafter") rest[key] = value;
    const ScenarioOptions o = options("plan_capacity", model, hardware, rest, true);
    nlohmann::json out;
    capacity_comparison_json(compare_capacity(o, drafters, spec_library(kw), kKeywordSpelling), out);
    return json_to_python(out);
  }
  const ScenarioOptions o = options("plan_capacity", model, hardware, kw, true);
  const SpecLibrary specs = spec_library(kw);
  const SimulateResult r = simulate_modes(o, build_scenario(o, specs, kKeywordSpelling), kKeywordSpelling);
  nlohmann::json out = simulate_json(r, o.breakdown);
  capacity_planning_json(run_capacity_planning(o, r.built.scenario, specs, kKeywordSpelling), r.built.scenario, out);
  return json_to_python(out);
}

const char* const kSimulateDoc = R"(
Predicts TTFT, TPOT, throughput and speedup of one decoding configuration, as `specdec simulate --json`
does, and returns the same dict. The keywords are the command line's options with '_' for '-':
model, hardware, engine, drafter: spec names or JSON paths (`specdec simulate --list`); method: as --method
(default: the drafter's, else sequential); category: a drafter spec's published acceptance by name (with no
acceptance model given, the spec's default category is used, as on the command line); k = K.
The acceptance model, at most one: alpha (i.i.d.), acceptance (per-position conditional rates a1, a2, ...),
acceptance_table ({K: AL}), acceptance_by_depth (measured P(accepted >= d)), synthetic_al (an engine's forced
mean AL), tree_acceptance (per-depth per-rank probabilities, or a JSON file), trace (an HDF5 trace to
replay) or al (the measured AL of exactly this configuration); match_rate: draft-free methods' share of
steps that draft.
tree: a built-in name (mc_sim_7b_63, chain<K>), rank paths [[0], [1], [0, 0]] or a JSON file;
dynamic_tree: (total_tokens, depth, top_k), an EAGLE-2 tree chosen from the acceptance model.
best_k: search K for the lowest TPOT (a list of Ks; N: 1..N; True: 1..8) -> 'best_k', 'by_k', 'skipped';
best_tree: search EAGLE-2 trees (total_tokens, depths, top_ks), each an int or a list -> 'best_tree',
'by_tree', 'skipped'; batching: 'static' or 'continuous' -> 'batching'.
batch, tp, prompt_len, output_len, dtype: the workload; breakdown=True adds the per-operator costs;
specs_dirs: extra spec directories. Errors name the keyword.)";

const char* const kPlanCapacityDoc = R"(
Capacity planning, as `specdec simulate --capacity-rate R --tpot-target-ms T --json`: the cheapest
tensor-parallel degree x K x batch that serves capacity_rate requests/s within tpot_target_ms (checked at
the full batch, each replica's steps stretched by the prefill of its share of the prompts) and
ttft_target_ms (0 = none, held by TTFT plus the queueing wait), with sequential decoding planned beside
it. tp: the TPs searched (default every power of two up to one instance); k: the one K searched (default
K = 1..8; best_k: those Ks; best_tree: (total_tokens, depths, top_ks), EAGLE-2 trees searched instead,
each drafted from the acceptance model); price: USD per device-hour (default the hardware spec's).
Each replica is planned as an M/G/c queue (Poisson arrivals, c = its batch slots): max_utilization, the
highest busy share of a replica's slots a plan runs at, > 0 and < 1 (default 0.85); output_len_cv, the
coefficient of variation of output lengths, 0..4 (default 0: every output is output_len tokens;
exponential lengths: 1); ttft_percentile, 0 < P < 100: ttft_target_ms is checked at this percentile of
TTFT + wait instead of at the mean (the wait is reported at it, else at 99).
The other keywords are specdec.simulate's. Returns the command line's dict: 'scenario' and 'prediction'
(at the first TP), 'capacity', 'capacity_sequential' (each with its TPOT under load: 'tpot_ms' at the full
batch, 'tpot_at_mean_occupancy_ms', 'mean_occupancy', 'decode_tpot_ms', 'step_ms', 'decode_step_ms',
'prefill_ms_per_prompt', 'prefill_share', 'prompts_per_step', 'prefill_tokens_per_step',
'replicas_set_by'; and its queue: 'utilization', 'p_wait', 'queue_wait_ms', 'ttft_with_wait_ms',
'percentile', 'queue_wait_at_percentile_ms', 'ttft_at_percentile_ms', 'service_s', 'service_scv'),
'capacity_search' (with 'max_utilization', 'output_len_cv', 'ttft_checked_at', 'tpot_checked_at',
'prefill'), 'capacity_queueing' and 'error_band'.
drafter=[A, B, ...] compares methods: each drafter planned as above with the acceptance given (the same for
all) or, with none, its spec's published default -> 'capacity_by_drafter' (per drafter: 'method',
'acceptance', 'capacity' or 'why_not'), 'capacity_best_drafter', 'capacity_comparison_note' when one
acceptance model was given for several methods, and the cheapest drafter's plan as above (as
`specdec simulate --drafter A,B ... --capacity-rate R --tpot-target-ms T --json`).)";

}  // namespace

void bind_simulate(py::module_& mod) {
  // The signature line is written from kKeywords (pybind11's would read "**kwargs").
  py::options opts;
  opts.disable_function_signatures();
  static const std::string simulate_doc = signature("simulate", false) + "\n" + kSimulateDoc;
  static const std::string plan_doc = signature("plan_capacity", true) + "\n" + kPlanCapacityDoc;
  mod.def("simulate", &simulate, py::arg("model"), py::arg("hardware"), simulate_doc.c_str());
  mod.def("plan_capacity", &plan_capacity, py::arg("model"), py::arg("hardware"), plan_doc.c_str());
}

}  // namespace specdec::python
