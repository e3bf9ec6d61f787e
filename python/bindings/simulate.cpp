#include "python/bindings/simulate.hpp"

#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "python/bindings/conversions.hpp"
#include "python/bindings/keyword_values.hpp"
#include "reference/core/error.hpp"
#include "simulator/capacity_comparison.hpp"
#include "simulator/capacity_planning.hpp"
#include "simulator/policy_mode.hpp"
#include "simulator/scenario_options.hpp"
#include "simulator/simulate_modes.hpp"
#include "simulator/spec_library.hpp"

namespace specdec::python {

namespace {

using namespace specdec::sim;

// Python values as the simulator's option values (keyword_values.hpp); which options go together,
// and every bound, is build_scenario's to check (in the keywords' spelling).

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

// The functions of this file, in the order of Keyword::defaults.
enum Function { kSimulate, kPlanCapacity, kSimulatePolicy, kRecommendPolicy, kFunctions };
const char* const kFunctionNames[kFunctions] = {"simulate", "plan_capacity", "simulate_policy", "recommend_policy"};

// What the keywords set: a scenario's options, and the policy pricing's (simulator/policy_mode).
struct Options : ScenarioOptions {
  PolicyModeOptions policy;
};

CapacityOptions& capacity(Options& o) {
  if (!o.capacity) o.capacity.emplace();
  return *o.capacity;
}

// A keyword of these functions: its signature text and how it sets the options (None leaves the
// default).
struct Keyword {
  const char* name;
  const char* type;
  const char* defaults[kFunctions];  // per function its default as the signature shows it; nullptr: not its keyword
  void (*set)(const py::handle& x, const std::string& name, Options& o);
};

// clang-format off
const Keyword kKeywords[] = {
  // simulate_policy's one required keyword (its default "": none).
  {"policy", "str", {nullptr, nullptr, "", nullptr}, [](const py::handle& x, const std::string& n, Options& o) { o.policy.policy = text(x, n); }},
  {"engine", "str", {"None", "None", "None", "None"}, [](const py::handle& x, const std::string& n, Options& o) { o.engine = text(x, n); }},
  {"engine_version", "str", {"None", "None", "None", "None"}, [](const py::handle& x, const std::string& n, Options& o) { o.engine_version = text(x, n); }},
  // plan_capacity also takes a list of drafters: their methods compared (read before the keywords).
  {"drafter", "str", {"None", "None", "None", "None"}, [](const py::handle& x, const std::string& n, Options& o) { o.drafter = text(x, n); }},
  {"method", "str", {"None", "None", "None", "None"}, [](const py::handle& x, const std::string& n, Options& o) { o.method = text(x, n); }},
  {"category", "str", {"None", "None", "None", "None"}, [](const py::handle& x, const std::string& n, Options& o) { o.category = text(x, n); }},
  {"k", "int", {"4", "None", "4", "4"}, [](const py::handle& x, const std::string& n, Options& o) { o.k = integer(x, n); }},
  {"best_k", "list | int | bool", {"None", "None", nullptr, nullptr}, [](const py::handle& x, const std::string& n, Options& o) {
     if (!(py::isinstance<py::bool_>(x) && !x.cast<bool>())) o.best_k = best_ks(x, n); }},
  {"best_tree", "tuple", {"None", "None", nullptr, nullptr}, [](const py::handle& x, const std::string& n, Options& o) { o.best_tree = tree_grid(x, n); }},
  {"tree", "str | list", {"None", "None", nullptr, nullptr}, [](const py::handle& x, const std::string& n, Options& o) {
     o.tree = json_text(x, n, "a tree name, a JSON file or rank paths [[0], [1], [0, 0]]"); }},
  {"dynamic_tree", "tuple", {"None", "None", nullptr, nullptr}, [](const py::handle& x, const std::string& n, Options& o) { o.dynamic_tree = integer_list(x, n); }},
  {"alpha", "float", {"None", "None", "None", "None"}, [](const py::handle& x, const std::string& n, Options& o) { o.alpha = number(x, n); }},
  {"acceptance", "list", {"None", "None", "None", "None"}, [](const py::handle& x, const std::string& n, Options& o) { o.acceptance = number_list(x, n); }},
  {"acceptance_table", "dict", {"None", "None", "None", "None"}, [](const py::handle& x, const std::string& n, Options& o) { o.acceptance_table = al_by_k(x, n); }},
  {"acceptance_by_depth", "list", {"None", "None", "None", "None"}, [](const py::handle& x, const std::string& n, Options& o) {
     o.acceptance_by_depth = number_list(x, n); }},
  {"synthetic_al", "float", {"None", "None", "None", "None"}, [](const py::handle& x, const std::string& n, Options& o) { o.synthetic_al = number(x, n); }},
  {"tree_acceptance", "list | str", {"None", "None", "None", "None"}, [](const py::handle& x, const std::string& n, Options& o) {
     o.tree_acceptance = json_text(x, n, "per-depth lists of per-rank probabilities or a JSON file"); }},
  {"trace", "str", {"None", "None", "None", "None"}, [](const py::handle& x, const std::string&, Options& o) {
     o.trace = py::str(x).cast<std::string>(); }},
  {"al", "float", {"None", "None", nullptr, nullptr}, [](const py::handle& x, const std::string& n, Options& o) { o.al = number(x, n); }},
  {"match_rate", "float", {"None", "None", "None", "None"}, [](const py::handle& x, const std::string& n, Options& o) { o.match_rate = number(x, n); }},
  {"batch", "int", {"1", "1", nullptr, nullptr}, [](const py::handle& x, const std::string& n, Options& o) { o.batch = integer(x, n); }},
  {"batching", "str", {"None", "None", nullptr, nullptr}, [](const py::handle& x, const std::string& n, Options& o) { o.batching = text(x, n); }},
  {"tp", "int", {"1", nullptr, "1", "1"}, [](const py::handle& x, const std::string& n, Options& o) { o.tp = integer(x, n); }},
  {"tp", "list | int", {nullptr, "None", nullptr, nullptr}, [](const py::handle& x, const std::string& n, Options& o) { capacity(o).tp = integer_list(x, n); }},
  {"dp_attention", "int", {"1", nullptr, "1", "1"}, [](const py::handle& x, const std::string& n, Options& o) { o.dp_attention = integer(x, n); }},
  {"ep", "int", {"1", nullptr, "1", "1"}, [](const py::handle& x, const std::string& n, Options& o) { o.ep = integer(x, n); }},
  // plan_capacity searches the layouts: the lists of degrees searched (None: every one the TP allows
  // on a mixture-of-experts model, plain TP on a dense one), as --dp-attention and --ep there.
  {"dp_attention", "list | int", {nullptr, "None", nullptr, nullptr}, [](const py::handle& x, const std::string& n, Options& o) {
     capacity(o).dp_attention = integer_list(x, n); }},
  {"ep", "list | int", {nullptr, "None", nullptr, nullptr}, [](const py::handle& x, const std::string& n, Options& o) {
     capacity(o).ep = integer_list(x, n); }},
  {"prompt_len", "int", {"512", "512", "512", "512"}, [](const py::handle& x, const std::string& n, Options& o) { o.prompt_len = integer(x, n); }},
  {"output_len", "int", {"256", "256", "256", "256"}, [](const py::handle& x, const std::string& n, Options& o) { o.output_len = integer(x, n); }},
  {"dtype", "str", {"None", "None", "None", "None"}, [](const py::handle& x, const std::string& n, Options& o) { o.dtype = text(x, n); }},
  {"capacity_rate", "float", {nullptr, "None", nullptr, nullptr}, [](const py::handle& x, const std::string& n, Options& o) {
     capacity(o).capacity_rate = number(x, n); }},
  {"tpot_target_ms", "float", {nullptr, "None", nullptr, nullptr}, [](const py::handle& x, const std::string& n, Options& o) {
     capacity(o).tpot_target_ms = number(x, n); }},
  {"ttft_target_ms", "float", {nullptr, "0", nullptr, nullptr}, [](const py::handle& x, const std::string& n, Options& o) {
     capacity(o).ttft_target_ms = number(x, n); }},
  {"price", "float", {nullptr, "None", nullptr, nullptr}, [](const py::handle& x, const std::string& n, Options& o) { capacity(o).price = number(x, n); }},
  // 0.85: kDefaultMaxUtilization, the command line's --max-utilization default.
  {"max_utilization", "float", {nullptr, "0.85", nullptr, nullptr}, [](const py::handle& x, const std::string& n, Options& o) {
     capacity(o).max_utilization = number(x, n); }},
  {"output_len_cv", "float", {nullptr, "0", nullptr, nullptr}, [](const py::handle& x, const std::string& n, Options& o) {
     capacity(o).output_len_cv = number(x, n); }},
  {"arrival_cv", "float", {nullptr, "1", nullptr, nullptr}, [](const py::handle& x, const std::string& n, Options& o) {
     capacity(o).arrival_cv = number(x, n); }},
  {"ttft_percentile", "float", {nullptr, "None", nullptr, nullptr}, [](const py::handle& x, const std::string& n, Options& o) {
     capacity(o).ttft_percentile = number(x, n); }},
  {"breakdown", "bool", {"False", "False", nullptr, nullptr}, [](const py::handle& x, const std::string&, Options& o) { o.breakdown = truth(x); }},
  // The policy functions: simulate_policy prices one policy at a list of batch sizes, recommend_policy
  // ranks them all at one (a list reaches policy_mode's check, which says so).
  {"batch", "list | int", {nullptr, nullptr, "1", nullptr}, [](const py::handle& x, const std::string& n, Options& o) {
     o.policy.batches = integer_list(x, n); o.batch = o.policy.batches.front(); }},
  {"batch", "int", {nullptr, nullptr, nullptr, "1"}, [](const py::handle& x, const std::string& n, Options& o) {
     o.policy.batches = integer_list(x, n); o.batch = o.policy.batches.front(); }},
  // PolicyModeOptions' defaults, the command line's --policy-steps, --policy-seed, --confidence-concentration.
  {"policy_steps", "int", {nullptr, nullptr, "20000", "20000"}, [](const py::handle& x, const std::string& n, Options& o) {
     o.policy.steps = integer(x, n); }},
  {"policy_seed", "int", {nullptr, nullptr, "1", "1"}, [](const py::handle& x, const std::string& n, Options& o) {
     o.policy.seed = integer(x, n); }},
  {"confidence_concentration", "float", {nullptr, nullptr, "2.0", "2.0"}, [](const py::handle& x, const std::string& n, Options& o) {
     o.policy.concentration = number(x, n); }},
  {"specs_dirs", "list", {"[]", "[]", "[]", "[]"}, nullptr},  // read by spec_library
};
// clang-format on

// "name(model: str, hardware: str, *, engine: str = None, ...) -> dict": the first line of the
// docstring, which help() shows and specdec's keyword check reads ("" as a default: required).
std::string signature(Function f) {
  std::vector<KeywordDoc> docs;
  for (const Keyword& k : kKeywords)
    if (const char* def = k.defaults[f]) docs.push_back({k.name, k.type, *def ? def : nullptr});
  return signature_line(kFunctionNames[f], "model: str, hardware: str", docs);
}

Options options(Function f, const std::string& model, const std::string& hardware, const py::kwargs& kw) {
  Options o;
  o.model = model;
  o.hardware = hardware;
  if (f == kPlanCapacity) o.capacity.emplace();
  for (auto [key, value] : kw) {
    const std::string name = key.cast<std::string>();
    const Keyword* found = nullptr;
    for (const Keyword& k : kKeywords)
      if (name == k.name && k.defaults[f]) found = &k;
    if (!found) throw py::type_error(std::string(kFunctionNames[f]) + "() got an unexpected keyword argument '" + name + "'");
    if (found->set && !value.is_none()) found->set(value, name, o);
  }
  return o;
}

py::object simulate(const std::string& model, const std::string& hardware, const py::kwargs& kw) {
  const Options o = options(kSimulate, model, hardware, kw);
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
    const Options o = options(kPlanCapacity, model, hardware, rest);
    nlohmann::json out;
    capacity_comparison_json(compare_capacity(o, drafters, spec_library(kw), kKeywordSpelling), out);
    return json_to_python(out);
  }
  const Options o = options(kPlanCapacity, model, hardware, kw);
  const SpecLibrary specs = spec_library(kw);
  const SimulateResult r = simulate_modes(o, build_scenario(o, specs, kKeywordSpelling), kKeywordSpelling);
  nlohmann::json out = simulate_json(r, o.breakdown);
  capacity_planning_json(run_capacity_planning(o, r.built.scenario, specs, kKeywordSpelling), r.built.scenario, out);
  return json_to_python(out);
}

// simulate_policy and recommend_policy: the scenario built as simulate builds it (at the first batch
// size), then priced by simulator/policy_mode without the Python lock.
py::object price_policies(Function f, const std::string& model, const std::string& hardware, const py::kwargs& kw) {
  Options o = options(f, model, hardware, kw);
  if (f == kSimulatePolicy && !o.policy.policy)
    throw py::type_error("simulate_policy() missing required keyword argument 'policy' (NAME[,key=value...], e.g. "
                         "'hf-heuristic' or 'vllm-batch,schedule=1:4/8:2/32:0'; `specdec policies` lists them)");
  o.policy.recommend = f == kRecommendPolicy;
  const SpecLibrary specs = spec_library(kw);
  const BuiltScenario built = build_scenario(o, specs, kKeywordSpelling);
  nlohmann::json out;
  {
    py::gil_scoped_release unlocked;
    out = policy_mode_json(run_policy_mode(o, built.scenario, o.policy, kKeywordSpelling));
  }
  return json_to_python(out);
}

py::object simulate_policy(const std::string& model, const std::string& hardware, const py::kwargs& kw) {
  return price_policies(kSimulatePolicy, model, hardware, kw);
}

py::object recommend_policy(const std::string& model, const std::string& hardware, const py::kwargs& kw) {
  return price_policies(kRecommendPolicy, model, hardware, kw);
}

const char* const kSimulateDoc = R"(
Predicts TTFT, TPOT, throughput and speedup of one decoding configuration, as `specdec simulate --json`
does, and returns the same dict. The keywords are the command line's options with '_' for '-':
model, hardware, engine, drafter: spec names or JSON paths (`specdec simulate --list`); engine_version: the
engine's release (e.g. '0.4.4': its host-work range and the host terms fitted to it; default the current);
method: as --method
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
batch, tp, prompt_len, output_len, dtype: the workload; dp_attention, ep: the layout over tp's devices
(data-parallel attention groups, expert-parallel degree dividing tp; as --dp-attention and --ep); breakdown=True adds the per-operator costs;
specs_dirs: extra spec directories. Errors name the keyword.)";

const char* const kPlanCapacityDoc = R"(
Capacity planning, as `specdec simulate --capacity-rate R --tpot-target-ms T --json`: the cheapest
tensor-parallel degree x layout x K x batch that serves capacity_rate requests/s within tpot_target_ms (checked
at the full batch, each replica's steps stretched by the prefill of its share of the prompts) and
ttft_target_ms (0 = none, held by TTFT plus the queueing wait), with sequential decoding planned beside
it over the same layouts. tp: the TPs searched (default every power of two up to one instance);
dp_attention, ep: the attention data-parallel and expert-parallel degrees searched at each TP (a D
dividing it; EP 1 or the TP; default every one on a mixture-of-experts model, plain TP on a dense one);
k: the one K searched (default
K = 1..8; best_k: those Ks; best_tree: (total_tokens, depths, top_ks), EAGLE-2 trees searched instead,
each drafted from the acceptance model); price: USD per device-hour (default the hardware spec's).
Each replica is planned as a G/G/c queue (c = its batch slots): max_utilization, the
highest busy share of a replica's slots a plan runs at, > 0 and < 1 (default 0.85); output_len_cv, the
coefficient of variation of output lengths, 0..4 (default 0: every output is output_len tokens;
exponential lengths: 1); arrival_cv, the coefficient of variation of the load's interarrival times, 0..4
(default 1: Poisson; above 1: bursty; each replica sees its random share); ttft_percentile, 0 < P < 100: ttft_target_ms is checked at this percentile of
TTFT + wait instead of at the mean (the wait is reported at it, else at 99).
The other keywords are specdec.simulate's. Returns the command line's dict: 'scenario' and 'prediction'
(at the first TP), 'capacity', 'capacity_sequential' (each with its TPOT under load: 'tpot_ms' at the full
batch, 'tpot_at_mean_occupancy_ms', 'mean_occupancy', 'decode_tpot_ms', 'step_ms', 'decode_step_ms',
'prefill_ms_per_prompt', 'prefill_share', 'prompts_per_step', 'prefill_tokens_per_step',
'replicas_set_by'; and its queue: 'utilization', 'p_wait', 'queue_wait_ms', 'ttft_ms' (under the load: half a
step, then the step or forward that prefills the prompt), 'ttft_alone_ms', 'ttft_with_wait_ms',
'percentile', 'queue_wait_at_percentile_ms', 'ttft_at_percentile_ms', 'service_s', 'service_scv', 'arrival_scv'),
'capacity_search' (with 'layouts', 'configurations' and 'batches_priced', the search's cost,
'max_utilization', 'output_len_cv', 'arrival_cv', 'ttft_checked_at', 'tpot_checked_at', 'prefill'; every configuration
with its 'tp', 'dp_attention', 'ep' and 'layout'), 'capacity_queueing' and 'error_band'.
drafter=[A, B, ...] compares methods: each drafter planned as above with the acceptance given (the same for
all) or, with none, its spec's published default -> 'capacity_by_drafter' (per drafter: 'method',
'acceptance', 'capacity' or 'why_not'), 'capacity_best_drafter', 'capacity_comparison_note' when one
acceptance model was given for several methods, and the cheapest drafter's plan as above (as
`specdec simulate --drafter A,B ... --capacity-rate R --tpot-target-ms T --json`).)";

const char* const kSimulatePolicyDoc = R"(
Prices a speculation policy, as `specdec simulate --policy SPEC --json` does, and returns the same dict.
policy: NAME[,key=value...] (`specdec policies`, docs/policies.md); k: the policies' ceiling, the deepest
chain drafted (default 4). The policy is driven through a synthetic acceptance process by Monte Carlo
(policy_steps decoding steps, at least 100; policy_seed; the drafter's confidence in draft i is
Beta(mean a_i, confidence_concentration)) and priced with the cost model's step times, beside every fixed K
in closed form. batch: one batch size or a list (a policy may choose K by batch size).
The scenario keywords are specdec.simulate's: model, hardware, engine, drafter (a chain drafter), method,
category, the acceptance model (alpha, acceptance, acceptance_table, acceptance_by_depth, synthetic_al,
tree_acceptance or trace: per-position rates up to k), match_rate, tp, prompt_len, output_len, dtype,
specs_dirs. Returns 'scenario' (model, hardware, engine, drafter, method, max_depth, batch, tp, lengths,
acceptance) and, for one batch size, 'batch', 'policy_pricing' (AL and its standard error, K histograms,
drafter forwards, step, TPOT, tokens/s, speedup and its standard error, ...), 'best_fixed' and 'fixed_by_k';
for a list, 'by_batch', one such dict per batch size. Errors name the keyword.)";

const char* const kRecommendPolicyDoc = R"(
Prices every registered speculation policy with its defaults (and goodput with this scenario's costs) and
the best fixed K, and ranks them, as `specdec simulate --recommend-policy --json` does; returns the same
dict: 'scenario' and 'recommendation' ('recommended', 'clear_winner', 'best_fixed', 'ranking' fastest
first, 'policies', 'fixed_by_k'). batch: one batch size. The other keywords are specdec.simulate_policy's
(without policy).)";

}  // namespace

void bind_simulate(py::module_& mod) {
  // The signature line is written from kKeywords (pybind11's would read "**kwargs").
  py::options opts;
  opts.disable_function_signatures();
  static const std::string simulate_doc = signature(kSimulate) + "\n" + kSimulateDoc;
  static const std::string plan_doc = signature(kPlanCapacity) + "\n" + kPlanCapacityDoc;
  static const std::string policy_doc = signature(kSimulatePolicy) + "\n" + kSimulatePolicyDoc;
  static const std::string recommend_doc = signature(kRecommendPolicy) + "\n" + kRecommendPolicyDoc;
  mod.def("simulate", &simulate, py::arg("model"), py::arg("hardware"), simulate_doc.c_str());
  mod.def("plan_capacity", &plan_capacity, py::arg("model"), py::arg("hardware"), plan_doc.c_str());
  mod.def("simulate_policy", &simulate_policy, py::arg("model"), py::arg("hardware"), policy_doc.c_str());
  mod.def("recommend_policy", &recommend_policy, py::arg("model"), py::arg("hardware"), recommend_doc.c_str());
}

}  // namespace specdec::python
