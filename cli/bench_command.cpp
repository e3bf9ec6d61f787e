// specdec bench: measure this machine (read bandwidth) and every backend and method on it —
// sequential decode against the bandwidth limit, verify cost against tokens verified, drafter
// cost, end-to-end tokens/s and speedups — on a checkpoint or a random-weight preset. Prints
// tables; --out DIR also writes bench.json and CSV files (docs/benchmarks.md).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "experiments/bench/bench.hpp"
#include "cli/options.hpp"
#include "runtime/backend.hpp"
#include "reference/core/error.hpp"
#include "reference/methods/registry.hpp"
#include "reference/policies/policy_spec.hpp"
#include "simulator/trace_replay.hpp"
#include "traces/trace.hpp"

namespace specdec::cli {

namespace {

std::vector<std::string> split_list(const std::string& text, const std::string& option) {
  std::vector<std::string> out;
  if (!text.empty() && (text.front() == ',' || text.back() == ',')) throw Error(option + ": empty entry in '" + text + "'");
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) throw Error(option + ": empty entry in '" + text + "'");
    out.push_back(item);
  }
  if (out.empty()) throw Error(option + ": the list is empty");
  return out;
}

}  // namespace

int run_bench(const std::vector<std::string>& args, CommandIO& io) {
  std::string model, preset, dtype = "auto", backends, out, acceptance_trace;
  std::string methods;  // every registered method
  for (const std::string& m : method_names()) methods += (methods.empty() ? "" : ",") + m;
  bench::DrafterDirs drafters;
  MethodSpec shape;
  shape.tree = "chain";
  bench::BenchOptions o;
  uint64_t weight_seed = 0;
  double bandwidth_mb = 0;
  bool json = false;
  po::options_description desc("bench options");
  desc.add_options()
      ("model", po::value(&model), "checkpoint directory to measure (else --preset)")
      ("preset", po::value(&preset), "random-weight shape to measure: tiny | llama-22m | llama-100m | llama-0.5b | llama-1b | llama-3.1-8b (its fp32 weights take 32 GB on the host) (default tiny)")
      ("dtype", po::value(&dtype)->default_value(dtype), "--preset weights: F32 | BF16 | F16 | auto (BF16 for llama-1b and llama-3.1-8b, else F32); BF16/F16 weights are rounded once and shared by every backend")
      ("weight-seed", po::value(&weight_seed)->default_value(weight_seed), "--preset: seed of the random weights (drafters use seeds derived from it)")
      ("backends", po::value(&backends), "comma-separated backends to measure (default: every backend available here)")
      ("methods", po::value(&methods)->default_value(methods), ("comma-separated methods: " + known_methods()).c_str())
      ("k", po::value(&shape.k)->default_value(shape.k), "draft length of chains; P-EAGLE's parallel depth")
      ("tree", po::value(&shape.tree)->default_value(shape.tree), "eagle/eagle3 draft shape: chain | dynamic | mc_sim_7b_63 | JSON paths (P-EAGLE: static trees only)")
      ("depth", po::value(&shape.depth)->default_value(shape.depth), "dynamic tree: expansion depth")
      ("tree-top-k", po::value(&shape.tree_top_k)->default_value(shape.tree_top_k), "dynamic tree: children per node")
      ("total-tokens", po::value(&shape.total_tokens)->default_value(shape.total_tokens), "dynamic tree: tokens verified per step")
      ("acceptance-trace", po::value(&acceptance_trace), "replay this speculative trace's per-step accepted lengths instead of the real (greedy) acceptance; the forwards stay real")
      ("tokens", po::value(&o.tokens)->default_value(o.tokens), "new tokens per decode")
      ("prompt-length", po::value(&o.prompt_length)->default_value(o.prompt_length), "random prompt tokens before every measurement")
      ("repeat", po::value(&o.repeat)->default_value(o.repeat), "runs per measurement; the fastest counts")
      ("max-verify", po::value(&o.max_verify)->default_value(o.max_verify), "verify-cost table: 1, 2, 4, ... tokens up to this")
      ("threads", po::value(&o.threads)->default_value(o.threads), "worker threads of the backends (0 = the cores other processes are not busy on) and of the bandwidth measurement (0 = all)")
      ("bandwidth-mb", po::value(&bandwidth_mb)->default_value(bandwidth_mb), "bandwidth buffer in MiB (0 = twice the last-level cache, 256 to 1024)")
      ("seed", po::value(&o.seed)->default_value(o.seed), "seed of the random prompt tokens")
      ("out", po::value(&out), "directory for bench.json, decode.csv, verify_cost.csv, methods.csv (created; files written atomically)")
      ("json", po::bool_switch(&json), "print bench.json instead of the tables")
      ("policy", po::value<std::string>()->default_value("fixed")->notifier([&o](const std::string& text) {
         o.policy = parse_policy_spec(text, "--policy");
       }), "speculation policy of every speculative run, NAME[,key=value...] (`specdec policies`); bench.json reports each method's mean_draft_depth");
  add_forced_acceptance_option(desc, o.forced);
  // One drafter option per drafting method: --draft-model for a draft LM, --METHOD for a head.
  std::vector<std::string> drafter_options;
  for (const MethodEntry& e : method_registry()) {
    if (!e.drafter.loads_checkpoint()) continue;
    const bool lm = e.drafter.kind == DrafterNeed::Kind::language_model;
    drafter_options.push_back(lm ? "draft-model" : e.name);
    desc.add_options()(drafter_options.back().c_str(), po::value(&drafters[e.name]),
                       ("--model: " + e.drafter.description + " for " + e.name + " (else a random one)").c_str());
  }
  if (!parse_options(args, desc, io, "specdec bench (--preset NAME | --model DIR) [--backends reference,cpu] [--methods LIST] [--out DIR] [options]")) {
    return 0;
  }
  if (!model.empty() && !preset.empty()) throw Error("give either --model or --preset, not both");
  if (model.empty() && preset.empty()) preset = "tiny";
  if (bandwidth_mb < 0) throw Error("--bandwidth-mb must be >= 0");
  o.bandwidth_bytes = static_cast<std::size_t>(bandwidth_mb * 1024 * 1024);
  o.backends.clear();
  if (backends.empty()) {
    for (const std::string& b : known_backends())
      if (backend_available(b)) o.backends.push_back(b);
  } else {
    o.backends = split_list(backends, "--backends");
  }
  for (const std::string& b : o.backends) check_backend(b, "--backends");
  const std::vector<std::string> method_list = split_list(methods, "--methods");
  for (const std::string& m : method_list) {
    const MethodEntry& e = method_entry(m, "--methods");
    MethodSpec s = shape;
    s.name = e.name;
    // The shared --tree applies to the methods that take it; the others draft a chain.
    if (s.tree == "dynamic" ? !e.shapes.dynamic_tree : s.tree != "chain" && !e.shapes.static_tree) s.tree = "chain";
    check_method_spec(s);
    o.methods.push_back(s);
  }
  const bool drafter_given = std::any_of(drafters.begin(), drafters.end(), [](const auto& d) { return !d.second.empty(); });
  if (!preset.empty() && drafter_given) {
    std::string names;
    for (const std::string& o : drafter_options) names += (names.empty() ? "--" : " / --") + o;
    throw Error(names + " go with --model; a --preset gets random drafters");
  }
  if (!acceptance_trace.empty() && o.forced) throw Error("--forced-acceptance and --acceptance-trace both set the acceptance; give one");
  if (!acceptance_trace.empty()) {
    const Trace t = read_trace(acceptance_trace);
    o.accepted = sim::trace_acceptance(t).accepted;
    if (o.accepted.empty()) throw Error(acceptance_trace + " has no speculative steps with drafts to replay");
    o.acceptance = "replayed from " + acceptance_trace;
  }
  if (!out.empty() && std::filesystem::exists(out) && !std::filesystem::is_directory(out)) {
    throw Error("--out " + out + " exists and is not a directory");
  }
  apply_threads(o.threads);

  bench::BenchModels models;
  if (!preset.empty()) {
    Dtype precision = Dtype::F32;
    if (dtype == "auto") precision = preset == "llama-1b" || preset == "llama-3.1-8b" ? Dtype::BF16 : Dtype::F32;
    else precision = parse_dtype(dtype, "--dtype");
    if (precision != Dtype::F32 && precision != Dtype::BF16 && precision != Dtype::F16) throw Error("--dtype must be F32, BF16, F16 or auto");
    io.err << "building " << preset << " (" << dtype_name(precision) << ", random weights)" << std::endl;
    models = bench::preset_models(preset, precision, o.backends, method_list, weight_seed);
  } else {
    if (dtype != "auto") throw Error("--dtype applies to --preset; a checkpoint keeps its stored precision");
    io.err << "loading " << model << std::endl;
    models = bench::directory_models(model, o.backends, method_list, drafters, weight_seed);
  }
  const bench::BenchReport report = bench::run_bench(models, o, &io.err);
  if (!out.empty()) bench::write_bench(report, out);
  if (json) {
    io.out << bench::bench_json(report).dump(2) << "\n";
  } else {
    bench::print_bench(report, io.out);
    if (!out.empty()) io.out << "\nwrote " << out << ": bench.json, decode.csv, verify_cost.csv, methods.csv\n";
  }
  return 0;
}

}  // namespace specdec::cli
