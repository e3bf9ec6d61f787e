// specdec simulate: the cost simulator on the command line — one scenario (table or JSON), the
// best K, capacity planning, sweeps to CSV/HDF5, CPU measurement and calibration.
#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "cli/cli.hpp"
#include "cli/known_options.hpp"
#include "cli/simulate_capacity.hpp"
#include "cli/simulate_options.hpp"
#include "reference/core/error.hpp"
#include "reference/io/atomic_file.hpp"
#include "reference/core/input_limits.hpp"
#include "reference/drafting/draft_limits.hpp"
#include "reference/decoding/generation.hpp"
#include "simulator/batching.hpp"
#include "simulator/calibration.hpp"
#include "simulator/calibration_run.hpp"
#include "simulator/cpu_measure.hpp"
#include "simulator/evaluation.hpp"
#include "reference/methods/method_spec.hpp"
#include "simulator/policy_mode.hpp"
#include "simulator/policy_pricing.hpp"
#include "simulator/prediction_json.hpp"
#include "simulator/predictor.hpp"
#include "simulator/scenario_options.hpp"
#include "simulator/search.hpp"
#include "simulator/simulate_modes.hpp"
#include "simulator/spec_json.hpp"
#include "simulator/spec_library.hpp"
#include "simulator/capacity_comparison.hpp"
#include "simulator/sweep.hpp"
#include "simulator/sweep_options.hpp"

namespace po = boost::program_options;

namespace specdec::cli {

namespace {

using namespace specdec::sim;


std::vector<double> parse_double_list(const std::string& s, const std::string& option) {
  std::vector<double> out;
  for (const auto& item : split_list(s)) out.push_back(parse_double(item, option));
  if (out.empty()) throw Error("--" + option + ": no values in '" + s + "'");
  return out;
}

// The acceptance options as values; which of them may go together is the library's to check.
void read_acceptance_options(const po::variables_map& vm, ScenarioOptions& o) {
  if (vm.count("alpha")) o.alpha = vm["alpha"].as<double>();
  if (vm.count("acceptance")) o.acceptance = parse_double_list(vm["acceptance"].as<std::string>(), "acceptance");
  if (vm.count("acceptance-table")) {
    std::map<int, double> t;
    for (const auto& item : split_list(vm["acceptance-table"].as<std::string>())) {
      const auto colon = item.find(':');
      if (colon == std::string::npos) throw Error("--acceptance-table: entries are K:AL, got '" + item + "'");
      t[parse_int(item.substr(0, colon), "acceptance-table")] = parse_double(item.substr(colon + 1), "acceptance-table");
    }
    o.acceptance_table = t;
  }
  if (vm.count("acceptance-by-depth"))
    o.acceptance_by_depth = parse_double_list(vm["acceptance-by-depth"].as<std::string>(), "acceptance-by-depth");
  if (vm.count("synthetic-al")) o.synthetic_al = vm["synthetic-al"].as<double>();
  if (vm.count("tree-acceptance")) o.tree_acceptance = vm["tree-acceptance"].as<std::string>();
  if (vm.count("trace")) o.trace = vm["trace"].as<std::string>();
  if (vm.count("al")) o.al = vm["al"].as<double>();
}

// --best-tree TOTALS/DEPTHS/TOP_KS, each a list or range.
BestTreeGrid best_tree_grid(const std::string& grid) {
  std::vector<std::string> parts;
  std::istringstream in(grid);
  for (std::string part; std::getline(in, part, '/');) parts.push_back(part);
  if (parts.size() != 3)
    throw Error("--best-tree: expected TOTALS/DEPTHS/TOP_KS (each a list or range, e.g. 32,48,64/4-8/8,10), got '" + grid + "'");
  return {parse_int_list(parts[0], "best-tree (totals)", kMaxDraftNodes + 1),
          parse_int_list(parts[1], "best-tree (depths)", kMaxDraftDepth),
          parse_int_list(parts[2], "best-tree (top-k)", kMaxDraftTopK)};
}

// The options of one scenario and its modes, parsed from their strings (`batch`: the first of
// --policy's list, else the one batch size).
ScenarioOptions scenario_options(const po::variables_map& vm, int batch) {
  ScenarioOptions o;
  o.model = vm["model"].as<std::string>();
  o.hardware = vm["hardware"].as<std::string>();
  auto text = [&](const char* name, std::optional<std::string>& into) {
    if (vm.count(name)) into = vm[name].as<std::string>();
  };
  text("engine", o.engine);
  text("engine-version", o.engine_version);
  text("drafter", o.drafter);
  text("method", o.method);
  text("dtype", o.dtype);
  text("category", o.category);
  text("tree", o.tree);
  text("batching", o.batching);
  o.batch = batch;
  o.prompt_len = parse_int(vm["prompt-len"].as<std::string>(), "prompt-len");
  o.output_len = parse_int(vm["output-len"].as<std::string>(), "output-len");
  if (!vm["k"].defaulted()) o.k = parse_int(vm["k"].as<std::string>(), "k");
  if (vm.count("match-rate")) o.match_rate = vm["match-rate"].as<double>();
  read_acceptance_options(vm, o);
  if (vm.count("dynamic-tree")) o.dynamic_tree = parse_int_list(vm["dynamic-tree"].as<std::string>(), "dynamic-tree", kMaxDraftNodes + 1);
  if (vm.count("best-k")) o.best_k = best_k_list(vm["best-k"].as<std::string>());
  if (vm.count("best-tree")) o.best_tree = best_tree_grid(vm["best-tree"].as<std::string>());
  o.breakdown = vm.count("breakdown") > 0;
  // Capacity planning searches a list of TPs (--tp: every power of two of the instance by default).
  if (vm.count("capacity-rate") || vm.count("tpot-target-ms")) {
    CapacityOptions c;
    if (vm.count("capacity-rate")) c.capacity_rate = vm["capacity-rate"].as<double>();
    if (vm.count("tpot-target-ms")) c.tpot_target_ms = vm["tpot-target-ms"].as<double>();
    c.ttft_target_ms = vm["ttft-target-ms"].as<double>();
    if (vm.count("price")) c.price = vm["price"].as<double>();
    if (!vm["tp"].defaulted()) c.tp = parse_int_list(vm["tp"].as<std::string>(), "tp", kMaxTensorParallel);
    // The layouts searched at each TP: lists, as --tp is here.
    if (vm.count("dp-attention")) c.dp_attention = parse_int_list(vm["dp-attention"].as<std::string>(), "dp-attention", kMaxTensorParallel);
    if (vm.count("ep")) c.ep = parse_int_list(vm["ep"].as<std::string>(), "ep", kMaxTensorParallel);
    if (vm.count("max-utilization")) c.max_utilization = vm["max-utilization"].as<double>();
    if (vm.count("output-len-cv")) c.output_len_cv = vm["output-len-cv"].as<double>();
    if (vm.count("arrival-cv")) c.arrival_cv = vm["arrival-cv"].as<double>();
    if (vm.count("ttft-percentile")) c.ttft_percentile = vm["ttft-percentile"].as<double>();
    o.capacity = c;
  } else {
    for (const char* option : {"max-utilization", "output-len-cv", "arrival-cv", "ttft-percentile"})
      if (vm.count(option))
        throw Error(std::string("--") + option + " is a capacity planning option: give --capacity-rate and --tpot-target-ms too");
    o.tp = parse_int(vm["tp"].as<std::string>(), "tp");
    if (vm.count("dp-attention")) o.dp_attention = parse_int(vm["dp-attention"].as<std::string>(), "dp-attention");
    if (vm.count("ep")) o.ep = parse_int(vm["ep"].as<std::string>(), "ep");
  }
  return o;
}

// "tp 8" under plain tensor parallelism, else the layout ("8 devices: attention DP 8 x TP 1, experts EP 8").
std::string layout_text(const Workload& w) {
  const Parallelism par = parallelism_of(w);
  return par.plain() ? "tp " + std::to_string(w.tp) : describe_parallelism(par);
}

std::string fmt(double v, int precision = 3) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(precision) << v;
  return s.str();
}

void print_breakdown(std::ostream& out, const Prediction& p) {
  // Merge identical (phase, op) entries: per-layer ops repeat for each drafter step.
  struct Row {
    double count = 0, total = 0, flops = 0, bytes = 0;
    std::string bound;
  };
  std::vector<std::pair<std::string, Row>> rows;
  for (const auto& c : p.step.ops) {
    const std::string key = std::string(c.op.phase) + " " + c.op.name;
    auto it = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.first == key; });
    if (it == rows.end()) {
      rows.push_back({key, {}});
      it = rows.end() - 1;
    }
    it->second.count += c.op.count;
    it->second.total += c.total_s;
    it->second.flops += c.op.flops * c.op.count;
    it->second.bytes += c.op.bytes * c.op.count;
    it->second.bound = c.bound;
  }
  const double total = p.step.total_s();
  out << "\nPer-operator breakdown of one step (per device):\n";
  out << std::left << std::setw(34) << "phase op" << std::right << std::setw(9) << "count" << std::setw(12) << "GFLOP"
      << std::setw(12) << "MB" << std::setw(12) << "time us" << std::setw(8) << "share" << "  bound\n";
  for (const auto& [key, r] : rows)
    out << std::left << std::setw(34) << key << std::right << std::setw(9) << fmt(r.count, 1) << std::setw(12)
        << fmt(r.flops / 1e9, 3) << std::setw(12) << fmt(r.bytes / 1e6, 2) << std::setw(12) << fmt(r.total * 1e6, 1)
        << std::setw(7) << fmt(100 * r.total / total, 1) << "%  " << r.bound << "\n";
}

// The engine and, where one is named, its release ("sglang 0.4.4").
std::string engine_text(const Scenario& s) {
  return s.engine_version.empty() ? s.engine.name : s.engine.name + " " + s.engine_version;
}

void print_prediction(std::ostream& out, const Scenario& s, const Prediction& p, const std::string& measured_note = "") {
  out << "target " << s.target.name << " on " << s.hardware.name << " with " << engine_text(s) << " (" << layout_text(s.workload) << ", batch "
      << s.workload.batch << ", prompt " << s.workload.prompt_len << ", output " << s.workload.output_len << ")\n";
  const bool lookup = p.method != Method::sequential && draft_free(p.method);
  out << "method " << method_name(p.method);
  if (lookup) out << " (draft-free: no drafter forward)";
  else if (s.drafter) out << " with " << s.drafter->name;
  if (p.tree_nodes) out << ", tree of " << (lookup ? "up to " : "") << p.tree_nodes << " nodes, depth " << p.k;
  else if (p.method != Method::sequential) out << ", K = " << p.k;
  if (s.measured_tokens_per_step && p.method != Method::sequential)
    out << ", acceptance: " << (measured_note.empty() ? std::string("measured AL") : measured_note);
  else if (s.acceptance && p.method != Method::sequential) out << ", acceptance: " << s.acceptance->describe();
  out << "\n\n";
  auto line = [&](const std::string& k, const std::string& v) { out << "  " << std::left << std::setw(34) << k << v << "\n"; };
  line("AL (tokens/step, incl. bonus)", fmt(p.tokens_per_step, 3));
  line("TPOT", fmt(p.tpot_s * 1e3, 3) + " ms");
  line("TTFT", fmt(p.ttft_s * 1e3, 2) + " ms");
  line("throughput (per replica)", fmt(p.throughput_tokens_per_s, 1) + " tokens/s");
  line("sequential TPOT", fmt(p.sequential_tpot_s * 1e3, 3) + " ms");
  line("speedup", fmt(p.speedup, 3) + "x");
  line("step = draft + verify + overhead",
       fmt(p.step.total_s() * 1e3, 3) + " = " + fmt(p.step.draft_s * 1e3, 3) + " + " + fmt(p.step.verify_s * 1e3, 3) +
           " + " + fmt(p.step.overhead_s * 1e3, 3) + " ms");
  if (s.drafter && (p.method == Method::mtp || p.method == Method::medusa)) {
    // The drafter's own terms of one step, per device: what its forwards read and compute.
    const Drafter& d = *s.drafter;
    if (p.method == Method::mtp) {
      std::string modules;
      for (int f = 0; f < p.step.draft_forwards && f < 8; ++f) modules += (f ? "," : "") + std::to_string(f % d.num_modules);
      if (p.step.draft_forwards > 8) modules += ",...";
      line("drafter forwards per step", std::to_string(p.step.draft_forwards) + " (module f mod " +
                                            std::to_string(d.num_modules) + ": " + modules + ")");
    } else {
      line("drafter forwards per step", std::to_string(p.step.draft_forwards) + " (one pass of " + std::to_string(p.k) +
                                            " of " + std::to_string(d.num_heads) + " heads, " +
                                            std::to_string(d.num_layers) + " residual block(s) each)");
    }
    line("drafter weights read per step", fmt(p.step.draft_weight_bytes / 1e6, 1) + " MB, " +
                                              fmt(p.step.draft_flops / 1e9, 3) + " GFLOP");
    line("verified tokens per sequence", fmt(p.step.verify_tokens, 0));
  }
  if (lookup) {
    line("of which draft lookup (host)", fmt(p.step.lookup_s * 1e3, 3) + " ms");
    line("verified tokens per sequence", fmt(p.step.verify_tokens, 3) + " (match rate " + fmt(s.match_rate, 3) + ")");
  }
  line("verify intensity / ridge", fmt(p.verify_intensity, 1) + " / " + fmt(p.ridge_point, 1) + " FLOP/byte");
  line("memory per device", fmt((p.weight_bytes_per_device + p.kv_bytes_per_device) / 1e9, 2) + " GB of " +
                                fmt(s.hardware.memory_bytes / 1e9, 1) + (p.fits_memory ? " (fits)" : " (DOES NOT FIT)"));
}

int usage(std::ostream& out, const po::options_description& desc) {
  out << "usage: specdec simulate --model M --hardware H [--drafter D --k K --alpha A] [options]\n"
         "       specdec simulate --sweep OUT.{csv,h5} --model M1,M2 --hardware H1,H2 --drafter none,D1 --k 1-8 ...\n"
         "       specdec simulate --model M --hardware H --drafter D --k KMAX --alpha A --policy SPEC [--batch 1,8,32]\n"
         "       specdec simulate --model M --hardware H --drafter D --k KMAX --alpha A --recommend-policy\n"
         "       specdec simulate --measure-cpu OUT.json\n"
         "       specdec simulate --calibrate MEASURED.{json,csv} [--hardware H] [--engine E] [--output FITTED.json]\n"
         "                        [--engine-output FITTED_ENGINE.json]\n"
         "       specdec simulate --calibrate-traces T1.h5,T2.h5,... --hardware H [--output FITTED.json]\n"
         "       specdec simulate --evaluate PUBLISHED.json|DIR [--specs-dir FITTED] [--hardware H] [--engine E]\n"
         "       specdec simulate --model M --hardware H --method ngram|prompt-lookup|ngram-tree|suffix|suffix-tree\n"
         "                        --category C [--k K | --best-k N]        (draft-free: acceptance by prompt category)\n"
         "       specdec simulate --model M --hardware H --drafter mtp-...|medusa-... [--category C | --alpha A] ...\n\n"
         "Predicts TTFT, TPOT, throughput and speedup of sequential, draft-model, EAGLE, EAGLE-3, P-EAGLE, MTP,\n"
         "Medusa and draft-free (n-gram lookup, suffix decoding) decoding from model, drafter, hardware and engine specs\n"
         "(simulator/specs; any HF config.json works as --model). AL counts the bonus token (plain decoding = 1).\n\n"
      << desc << "\n";
  return 0;
}

int run_measure_cpu(const po::variables_map& vm, CommandIO& io) {
  CpuMeasureOptions opt;
  opt.threads = vm["threads"].as<int>();
  if (vm.count("quick")) {
    opt.array_bytes = 32e6;
    opt.gemm_size = 256;
    opt.min_seconds = 0.05;
  }
  const CpuMeasurement m = measure_cpu(opt);
  HardwareSpec h = cpu_hardware_spec(m, vm.count("name") ? vm["name"].as<std::string>() : "cpu-local");
  nlohmann::json j = hardware_spec_to_json(
      h, {{"memory_bandwidth_bytes_per_s", "measured: streaming read of large float arrays, all threads at once"},
          {"peak_flops_per_s", "measured: fp32 Eigen GEMM, one per thread at once"},
          {"memory_bytes", "sysconf(_SC_PHYS_PAGES)"},
          {"kernel_floor_s", "measured: an 8x8 GEMM call"}});
  j["measured"] = cpu_measurement_to_json(m);
  j["source"] = "measured by specdec simulate --measure-cpu";
  const std::string out_path = vm["measure-cpu"].as<std::string>();
  specdec::write_file_atomically(out_path, j.dump(2) + "\n");
  io.out << "threads " << m.threads << "\n"
         << "memory bandwidth: " << fmt(m.bandwidth_single_bytes_per_s / 1e9, 2) << " GB/s (1 thread), "
         << fmt(m.bandwidth_all_bytes_per_s / 1e9, 2) << " GB/s (all)\n"
         << "fp32 GEMM: " << fmt(m.flops_single_per_s / 1e9, 2) << " GFLOP/s (1 thread), " << fmt(m.flops_all_per_s / 1e9, 2)
         << " GFLOP/s (all)\n"
         << "wrote " << out_path << "\n";
  return 0;
}

int run_calibrate(const po::variables_map& vm, const SpecLibrary& specs, CommandIO& io) {
  CalibrationOptions o;
  if (vm.count("calibrate")) o.measured = split_list(vm["calibrate"].as<std::string>());
  if (vm.count("calibrate-traces")) o.traces = split_list(vm["calibrate-traces"].as<std::string>());
  if (vm.count("hardware")) o.hardware = vm["hardware"].as<std::string>();
  if (vm.count("engine")) o.engine = vm["engine"].as<std::string>();
  if (vm.count("fit")) o.fit = split_list(vm["fit"].as<std::string>());
  o.cross_validate = vm.count("cross-validate") > 0;
  const CalibrationRun run = run_calibration(o, specs, kCommandLineSpelling);
  const CalibrationSet& set = run.set;
  const CalibrationResult& before = run.before;
  const CalibrationResult& r = run.fitted;
  const CrossValidation* cv = run.cross_validation ? &*run.cross_validation : nullptr;
  if (vm.count("json")) {
    io.out << calibration_json(run).dump(2) << "\n";
  } else {
    io.out << "calibration of " << run.start.hardware.name << " with engine " << run.start.engine.name << " on " << set.rows.size()
           << " measured configurations (" << set.source << ")\n\n";
    io.out << std::left << std::setw(36) << "parameter" << std::right << std::setw(14) << "before" << std::setw(14) << "after\n";
    for (size_t i = 0; i < r.parameters.size(); ++i)
      io.out << std::left << std::setw(36) << r.parameters[i] << std::right << std::setw(14) << std::setprecision(4)
             << r.before[i] << std::setw(14) << r.after[i] << "\n";
    io.out << "\n" << std::left << std::setw(40) << "configuration" << std::right << std::setw(12) << "measured" << std::setw(12)
           << "before" << std::setw(12) << "fitted" << std::setw(9) << "error\n";
    for (size_t i = 0; i < r.rows.size(); ++i)
      io.out << std::left << std::setw(40) << r.rows[i].label << std::right << std::setw(9) << fmt(r.rows[i].measured_s * 1e3)
             << " ms" << std::setw(9) << fmt(before.rows[i].predicted_s * 1e3) << " ms" << std::setw(9)
             << fmt(r.rows[i].predicted_s * 1e3) << " ms" << std::setw(8) << fmt(100 * r.rows[i].relative_error, 1) << "%\n";
    io.out << "\nlargest error " << fmt(100 * r.max_abs_error, 1) << "% (before fitting " << fmt(100 * before.max_abs_error, 1)
           << "%); times are TPOT where the file gave TPOT, else step times\n";
  }
  if (cv && !vm.count("json")) {
    io.out << "\nheld-out error (leave one " << cv->grouping << " out: each " << cv->grouping
           << " predicted by a fit to the others)\n";
    for (const auto& f : cv->folds)
      for (const auto& row : f.rows)
        io.out << "  " << std::left << std::setw(38) << (cv->grouping == "source" ? f.held_out + ": " + row.label : row.label)
               << std::right << std::setw(9) << fmt(row.measured_s * 1e3) << " ms" << std::setw(9)
               << fmt(row.predicted_s * 1e3) << " ms" << std::setw(8) << fmt(100 * row.relative_error, 1) << "%\n";
    io.out << "largest held-out error " << fmt(100 * cv->max_abs_error, 1) << "%, RMS log error "
           << fmt(cv->rms_log_error, 3) << "\n";
  }
  if (vm.count("output")) {
    write_calibrated_hardware(run, vm["output"].as<std::string>(), "specdec simulate --calibrate");
    if (!vm.count("json")) io.out << "wrote " << vm["output"].as<std::string>() << "\n";
  }
  if (vm.count("engine-output")) {
    write_calibrated_engine(run, vm["engine-output"].as<std::string>(), "specdec simulate --calibrate");
    if (!vm.count("json")) io.out << "wrote " << vm["engine-output"].as<std::string>() << "\n";
  }
  return 0;
}

// Published speedups predicted from the specs alone (the sources' ALs given): never fitted.
int run_evaluate(const po::variables_map& vm, const SpecLibrary& specs, CommandIO& io) {
  const std::string hw = vm.count("hardware") ? vm["hardware"].as<std::string>() : "";
  const std::string engine = vm.count("engine") ? vm["engine"].as<std::string>() : "";
  const Evaluation e = evaluate_published_path(vm["evaluate"].as<std::string>(), specs, hw, engine, kCommandLineSpelling);
  const std::vector<EvaluationResult>& results = e.sets;
  const EvaluationResult& all = e.all;
  if (vm.count("json")) {
    io.out << evaluation_json(e).dump(2) << "\n";
    return 0;
  }
  for (const auto& r : results) {
    io.out << (r.name.empty() ? "" : r.name + ": ") << r.source << "\n";
    int width = 8;
    for (const auto& row : r.rows) width = std::max(width, int(row.label.size()) + 2);
    io.out << "  " << std::left << std::setw(width) << "result" << std::setw(26) << "hardware / engine" << std::right
           << std::setw(6) << "AL" << std::setw(11) << "published" << std::setw(11) << "predicted" << std::setw(9)
           << "error\n";
    for (const auto& row : r.rows)
      io.out << "  " << std::left << std::setw(width) << row.label << std::setw(26) << (row.hardware + " / " + row.engine)
             << std::right << std::setw(6) << fmt(row.acceptance_length, 2) << std::setw(10)
             << fmt(row.published_speedup, 2) << "x" << std::setw(10) << fmt(row.predicted_speedup, 2) << "x"
             << std::setw(8) << fmt(100 * row.relative_error, 1) << "%\n";
    for (const auto& k : r.skipped) io.out << "  skipped " << k.label << ": " << k.reason << "\n";
    io.out << "  largest error " << fmt(100 * r.max_abs_error, 1) << "%, mean |error| " << fmt(100 * r.mean_abs_error, 1)
           << "%, mean " << fmt(100 * r.mean_error, 1) << "%, RMS log " << fmt(r.rms_log_error, 3) << "\n\n";
  }
  io.out << all.rows.size() << " published results in " << results.size() << " set(s)"
         << (all.skipped.empty() ? "" : " (" + std::to_string(all.skipped.size()) + " skipped: no spec)")
         << ": largest error " << fmt(100 * all.max_abs_error, 1) << "%, mean |error| " << fmt(100 * all.mean_abs_error, 1)
         << "%, mean " << fmt(100 * all.mean_error, 1) << "% (the bias: > 0, speedup predicted too high), RMS log " << fmt(all.rms_log_error, 3) << "\n";
  return 0;
}

int run_sweep_mode(const po::variables_map& vm, const SpecLibrary& specs, CommandIO& io) {
  SweepOptions o;
  if (vm.count("model")) o.models = split_list(vm["model"].as<std::string>());
  if (vm.count("hardware")) o.hardware = split_list(vm["hardware"].as<std::string>());
  if (vm.count("drafter")) o.drafters = split_list(vm["drafter"].as<std::string>());
  o.ks = parse_int_list(vm["k"].as<std::string>(), "k", kMaxDraftDepth);
  o.batches = parse_int_list(vm["batch"].as<std::string>(), "batch", kMaxSimulatedBatch);
  o.tps = parse_int_list(vm["tp"].as<std::string>(), "tp", kMaxTensorParallel);
  o.prompt_lens = parse_int_list(vm["prompt-len"].as<std::string>(), "prompt-len", kMaxPositions);
  o.output_lens = parse_int_list(vm["output-len"].as<std::string>(), "output-len", kMaxPositions);
  o.alphas = parse_double_list(vm["alphas"].as<std::string>(), "alphas");
  read_acceptance_options(vm, o.scenario);
  // Refused in a sweep (sweep_spec_from_options says why); given here as the scenario would take them.
  if (vm.count("tree")) o.scenario.tree = vm["tree"].as<std::string>();
  if (vm.count("dynamic-tree")) o.scenario.dynamic_tree = parse_int_list(vm["dynamic-tree"].as<std::string>(), "dynamic-tree", kMaxDraftNodes + 1);
  if (vm.count("best-k")) o.scenario.best_k = best_k_list(vm["best-k"].as<std::string>());
  if (vm.count("best-tree")) o.scenario.best_tree = best_tree_grid(vm["best-tree"].as<std::string>());
  if (vm.count("dp-attention")) o.dp_attentions = parse_int_list(vm["dp-attention"].as<std::string>(), "dp-attention", kMaxTensorParallel);
  if (vm.count("ep")) o.eps = parse_int_list(vm["ep"].as<std::string>(), "ep", kMaxTensorParallel);
  if (vm.count("dtype")) o.dtype = vm["dtype"].as<std::string>();
  if (vm.count("engine")) o.engine = vm["engine"].as<std::string>();
  if (vm.count("engine-version")) o.engine_version = vm["engine-version"].as<std::string>();
  o.any_target = vm.count("any-target") > 0;
  const SweepSpec spec = sweep_spec_from_options(o, kCommandLineSpelling);
  const std::string out_path = vm["sweep"].as<std::string>();
  if (out_path != "-") check_sweep_output(out_path, "--sweep");
  std::vector<SweepRow> rows;
  const auto t0 = std::chrono::steady_clock::now();
  const SweepSummary sum = run_sweep(spec, specs, [&](const SweepRow& r) { rows.push_back(r); });
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (out_path == "-") {
    write_sweep_csv(io.out, rows);
  } else {
    write_sweep(out_path, rows);
    // The rate is of the predictions alone (one thread), without writing the file.
    io.out << "predicted " << sum.scenarios << " scenarios in " << fmt(secs, 2) << " s ("
           << fmt(sum.scenarios / std::max(secs, 1e-9), 0) << " per second, one thread); wrote " << out_path << "\n";
    write_sweep_pivot(io.out, rows);
  }
  if (sum.skipped) {
    io.err << "skipped " << sum.skipped << " invalid combinations, e.g.:\n";
    for (const auto& r : sum.skip_reasons) io.err << "  " << r << "\n";
  }
  return 0;
}

// "0:12% 4:88%": the K with a share of the steps.
std::string histogram_text(const std::vector<double>& h) {
  std::string t;
  for (std::size_t k = 0; k < h.size(); ++k)
    if (h[k] > 0) t += (t.empty() ? "" : " ") + std::to_string(k) + ":" + fmt(100 * h[k], 1) + "%";
  return t.empty() ? "-" : t;
}

// --policy and --recommend-policy: speculation policies priced by simulator/policy_pricing, the
// checks and the JSON simulator/policy_mode's.
int policy_mode(const po::variables_map& vm, const ScenarioOptions& o, const Scenario& s, const std::vector<int>& batches,
                CommandIO& io) {
  PolicyModeOptions mode;
  if (vm.count("policy")) mode.policy = vm["policy"].as<std::string>();
  mode.recommend = vm.count("recommend-policy") > 0;
  mode.batches = batches;
  mode.steps = vm["policy-steps"].as<int>();
  mode.seed = vm["policy-seed"].as<int>();
  mode.concentration = vm["confidence-concentration"].as<double>();
  const PolicyModeResult result = run_policy_mode(o, s, mode, kCommandLineSpelling);
  const PolicyPricingOptions& opt = result.pricing;
  if (vm.count("json")) {
    io.out << policy_mode_json(result).dump(2) << "\n";
    return 0;
  }
  auto header = [&]() {
    io.out << "target " << s.target.name << " on " << s.hardware.name << " with " << engine_text(s) << " (" << layout_text(s.workload)
           << ", batch ";
    for (std::size_t i = 0; i < batches.size(); ++i) io.out << (i ? "," : "") << batches[i];
    io.out << ", prompt " << s.workload.prompt_len << ", output " << s.workload.output_len << ")\n";
    io.out << "method " << method_name(s.plan.method) << (s.drafter ? " with " + s.drafter->name : "") << ", K up to "
           << s.plan.k << ", acceptance: " << (s.acceptance ? s.acceptance->describe() : "none") << "\n";
  };
  auto assumptions = [&](int steps, int sequences, int sequence_tokens) {
    io.out << "Monte Carlo: " << steps << " steps (" << sequences << " sequences of " << sequence_tokens
           << " tokens, a fresh policy each), seed " << opt.seed << "; ± is one standard error.\n"
           << "Assumption: the drafter's confidence in draft i is Beta(mean a_i, concentration " << fmt(opt.concentration, 2)
           << ") and the draft is accepted with that probability (E = a_i); batched steps are priced at each sequence's depth.\n";
  };

  if (result.recommendation) {
    const PolicyRecommendation& r = *result.recommendation;
    header();
    io.out << "\n";
    std::size_t width = 8;
    for (const PolicyRankingRow& row : r.ranking) width = std::max(width, row.label.size() + 2);
    const int w = static_cast<int>(width);
    io.out << std::left << std::setw(5) << "rank" << std::setw(w) << "policy" << std::right << std::setw(8) << "AL"
           << std::setw(8) << "± SE" << std::setw(8) << "K plan" << std::setw(9) << "K verif" << std::setw(9) << "fwd/step" << std::setw(10) << "TPOT ms"
           << std::setw(11) << "tokens/s" << std::setw(9) << "speedup" << std::setw(8) << "± SE" << "\n";
    for (std::size_t i = 0; i < r.ranking.size(); ++i) {
      const PolicyRankingRow& row = r.ranking[i];
      io.out << std::left << std::setw(5) << i + 1 << std::setw(w) << row.label << std::right << std::setw(8)
             << fmt(row.tokens_per_step, 3) << std::setw(8) << (row.closed_form ? "exact" : fmt(row.tokens_per_step_se, 3))
             << std::setw(8) << fmt(row.mean_k, 2) << std::setw(9) << fmt(row.mean_drafted, 2) << std::setw(9)
             << fmt(row.drafter_forwards_per_step, 2) << std::setw(10)
             << fmt(row.tpot_s * 1e3, 3) << std::setw(11) << fmt(row.throughput_tokens_per_s, 1) << std::setw(9)
             << fmt(row.speedup, 3) << std::setw(8) << (row.closed_form ? "exact" : fmt(row.speedup_se, 3)) << "\n";
    }
    const PolicyPricing& any = r.policies.front();
    io.out << "\nrecommendation: " << r.recommended << " (speedup " << fmt(r.ranking[0].speedup, 3) << "x"
           << (r.ranking.size() > 1 ? std::string(r.clear_winner ? ", ahead of " : ", within 2 standard errors of ") +
                                          r.ranking[1].label
                                    : std::string())
           << ")\n\n";
    assumptions(any.steps, any.sequences, any.sequence_tokens);
    return 0;
  }

  const std::vector<PolicyAtBatch>& rows = result.by_batch;
  header();
  io.out << "policy " << rows.front().priced.label << "\n\n";
  if (rows.size() == 1) {
    const PolicyPricing& p = rows.front().priced;
    const FixedDepthPricing& f = rows.front().best;
    auto line = [&](const std::string& k, const std::string& a, const std::string& b) {
      io.out << "  " << std::left << std::setw(32) << k << std::setw(std::max<int>(30, static_cast<int>(a.size()) + 2)) << a << b << "\n";
    };
    line("", "policy", "best fixed K = " + std::to_string(f.k) + " (closed form)");
    line("AL (tokens/step, incl. bonus)", fmt(p.tokens_per_step, 3) + " ± " + fmt(p.tokens_per_step_se, 3), fmt(f.tokens_per_step, 3));
    line("mean K planned / verified", fmt(p.mean_k, 2) + " / " + fmt(p.mean_drafted, 2), std::to_string(f.k));
    line("K histogram (planned)", histogram_text(p.k_histogram), std::to_string(f.k) + ":100%");
    line("drafts verified histogram", histogram_text(p.drafted_histogram), std::to_string(f.k) + ":100%");
    line("drafter forwards per step", fmt(p.drafter_forwards_per_step, 2), std::to_string(f.drafter_forwards));
    line("step (draft + verify)", fmt(p.step_s * 1e3, 3) + " ms", fmt(f.step_s * 1e3, 3) + " ms");
    line("TPOT", fmt(p.tpot_s * 1e3, 3) + " ms", fmt(f.tpot_s * 1e3, 3) + " ms");
    line("throughput (per replica)", fmt(p.throughput_tokens_per_s, 1) + " tokens/s", fmt(f.throughput_tokens_per_s, 1) + " tokens/s");
    line("speedup", fmt(p.speedup, 3) + "x ± " + fmt(p.speedup_se, 3), fmt(f.speedup, 3) + "x");
    io.out << "  (sequential TPOT " << fmt(p.sequential_tpot_s * 1e3, 3) << " ms)\n\n";
  } else {
    io.out << std::left << std::setw(7) << "batch" << std::setw(8) << "mean K" << std::setw(26) << "K histogram" << std::right
           << std::setw(8) << "AL" << std::setw(8) << "± SE" << std::setw(10) << "TPOT ms" << std::setw(11) << "tokens/s"
           << std::setw(9) << "speedup" << "   best fixed K: K  speedup\n";
    for (const PolicyAtBatch& a : rows) {
      const PolicyPricing& p = a.priced;
      io.out << std::left << std::setw(7) << a.batch << std::setw(8) << fmt(p.mean_k, 2) << std::setw(26)
             << histogram_text(p.k_histogram) << std::right << std::setw(8) << fmt(p.tokens_per_step, 3) << std::setw(8)
             << fmt(p.tokens_per_step_se, 3) << std::setw(10) << fmt(p.tpot_s * 1e3, 3) << std::setw(11)
             << fmt(p.throughput_tokens_per_s, 1) << std::setw(9) << fmt(p.speedup, 3) << "                " << a.best.k
             << "  " << fmt(a.best.speedup, 3) << "\n";
    }
    io.out << "\n";
  }
  const PolicyPricing& p = rows.front().priced;
  assumptions(p.steps, p.sequences, p.sequence_tokens);
  return 0;
}

}  // namespace

int run_simulate(const std::vector<std::string>& args, CommandIO& io) {
  po::options_description desc("options");
  // clang-format off
  desc.add_options()
    ("help,h", "print this help")
    ("model", po::value<std::string>(), "target model: spec name (e.g. llama-3.1-8b) or a config.json path; sweep: list")
    ("hardware", po::value<std::string>(), "hardware spec name (e.g. h100-sxm) or path; sweep: list")
    ("engine", po::value<std::string>(), "engine spec name (vllm, sglang, tensorrt-llm, hf-eager, transformers-neuronx, specdec-cpu, ideal) or path; default: vllm on GPUs, transformers-neuronx on Neuron, specdec-cpu on CPUs")
    ("engine-version", po::value<std::string>(), "the engine's release, a dotted version (e.g. 0.4.4): selects its host-work range and the host terms a calibration fitted to that release; default: the current release")
    ("drafter", po::value<std::string>(), "drafter spec name or path (its method is used); omit for sequential; sweep: list, 'none' = sequential; capacity planning: a list compares their methods")
    ("method", po::value<std::string>(), "sequential | draft | eagle | eagle3 | peagle | mtp | medusa (must match the drafter) | the draft-free ngram, prompt-lookup, ngram-tree, suffix, suffix-tree (no --drafter; NAME,key=value sets a parameter, e.g. ngram-tree,nodes=16)")
    ("category", po::value<std::string>(), "draft-free methods: take the acceptance of this prompt category from the method's drafter spec (simulator/specs/drafters/<method>.json or --drafter FILE); MTP and Medusa drafters: a published acceptance their spec holds (--list shows them)")
    ("match-rate", po::value<double>(), "draft-free methods: the share of steps that find a match and draft (the rest verify the bonus token alone); the acceptance model given describes the steps that draft")
    ("k", po::value<std::string>()->default_value(std::to_string(kDefaultDraftLength)), "draft length K (P-EAGLE: parallel depth); sweep: list or range 1-8")
    ("best-k", po::value<std::string>(), "search K and report the best (lowest TPOT): N (K = 1..N), a list 2,4,6 or a range 3-8; P-EAGLE: its parallel depth")
    ("best-tree", po::value<std::string>(), "search EAGLE-2 trees TOTALS/DEPTHS/TOP_KS, each a list or range (e.g. 32,48,64/4-8/8,10)")
    ("tree", po::value<std::string>(), "static draft tree: mc_sim_7b_63, chain<K>, or choices JSON [[0],[1],[0,0]]")
    ("dynamic-tree", po::value<std::string>(), "EAGLE-2 style tree TOTAL_TOKENS,DEPTH,TOP_K chosen from the acceptance model")
    ("alpha", po::value<double>(), "i.i.d. acceptance rate")
    ("alphas", po::value<std::string>()->default_value("0.8"), "sweep: list of i.i.d. acceptance rates")
    ("acceptance", po::value<std::string>(), "per-position conditional acceptance a1,a2,...")
    ("acceptance-table", po::value<std::string>(), "measured AL by K: K:AL,K:AL,...")
    ("acceptance-by-depth", po::value<std::string>(), "measured P(accepted >= d) for d = 1,2,...: a chain's (any K up to its length) or the --tree's (one per depth); vLLM's synthetic_acceptance_rates are this form")
    ("synthetic-al", po::value<double>(), "a forced mean AL, counting the bonus token, as vLLM's synthetic_acceptance_length (the minimum-variance schedule it resolves to) or SGLang's SGLANG_SIMULATE_ACC_LEN take it; answers K >= AL - 1")
    ("al", po::value<double>(), "measured AL (tokens per step, incl. the bonus token) of exactly this chain or --tree")
    ("tree-acceptance", po::value<std::string>(), "per-depth per-rank acceptance JSON [[d1r0,d1r1,..],[d2r0,..]] or file")
    ("trace", po::value<std::string>(), "replay the accepted lengths of a recorded trace (HDF5)")
    ("batch", po::value<std::string>()->default_value("1"), "batch size (with --batching continuous: concurrency); sweep and --policy: list")
    ("batching", po::value<std::string>(), "static (the batch runs until its slowest sequence is done) or continuous (finished requests replaced at once; their prefills share the steps): throughput and per-request TPOT with ragged acceptance")
    ("tp", po::value<std::string>()->default_value("1"), "tensor-parallel degree; sweep and capacity planning: list (capacity planning searches 1, 2, 4, ... up to one instance unless given)")
    ("dp-attention", po::value<std::string>(), "data-parallel attention over the --tp devices: D groups, each running attention, dense MLPs and the LM head for its own sequences at TP tp/D with its own KV cache (SGLang --enable-dp-attention --dp D, vLLM --data-parallel-size D); default 1; capacity planning: the list of Ds searched (default every divisor of each TP on a MoE model, 1 on a dense one)")
    ("ep", po::value<std::string>(), "expert parallelism: 1 (routed experts column-split, the default), --tp (each device holds E/tp whole experts; tokens dispatched and combined by all-to-all under --dp-attention) or a divisor of --tp (EP ranks of tp/EP devices column-splitting their experts, with --dp-attention 1); capacity planning and sweeps: the list of EP degrees searched (capacity default 1 and each TP on a MoE model)")
    ("prompt-len", po::value<std::string>()->default_value("512"), "prompt tokens; sweep: list")
    ("output-len", po::value<std::string>()->default_value("256"), "output tokens; sweep: list")
    ("dtype", po::value<std::string>(), "weights/KV dtype (bf16, fp16, fp32, fp8); default: the model's")
    ("json", "print JSON instead of a table")
    ("any-target", "sweep: pair every drafter with every model (by default a drafter whose spec names its target is priced on that model only)")
    ("policy", po::value<std::string>(), "price a speculation policy NAME[,key=value...] (`specdec policies`, docs/policies.md; --k is its ceiling) by Monte Carlo over the acceptance model: AL, K chosen, tokens/s, speedup, beside the best fixed K; --batch may be a list (K by batch size)")
    ("recommend-policy", "price every registered policy with its defaults (and the best fixed K) for this scenario: a ranked table and the recommendation")
    ("policy-steps", po::value<int>()->default_value(PolicyModeOptions{}.steps), "--policy/--recommend-policy: simulated decoding steps per policy")
    ("policy-seed", po::value<int>()->default_value(PolicyModeOptions{}.seed), "--policy/--recommend-policy: seed of the synthetic acceptance process")
    ("confidence-concentration", po::value<double>()->default_value(PolicyModeOptions{}.concentration, "2"), "--policy/--recommend-policy: concentration of the drafter-confidence model Beta(mean a_i, this) (an assumption; see docs/simulator.md)")
    ("breakdown", "print the per-operator breakdown of one step")
    ("capacity-rate", po::value<double>(), "capacity planning: offered load in requests/s")
    ("tpot-target-ms", po::value<double>(), "capacity planning: TPOT target, checked at the full batch with each replica's prompts prefilled in its steps")
    ("ttft-target-ms", po::value<double>()->default_value(0.0), "capacity planning: TTFT target (0 = none)")
    ("price", po::value<double>(), "capacity planning: USD per device-hour (default: the hardware spec's)")
    ("max-utilization", po::value<double>(), "capacity planning: the highest utilisation (busy share of a replica's batch slots) a plan runs at, > 0 and < 1 (default 0.85: stable with service times up to 18% longer than predicted)")
    ("arrival-cv", po::value<double>(), "capacity planning: coefficient of variation of the interarrival times of the whole load, 0..4 (default 1: Poisson arrivals; above 1: bursty); each replica sees its random share")
    ("output-len-cv", po::value<double>(), "capacity planning: coefficient of variation of output lengths for the queueing estimate, 0..4 (default 0: every output is --output-len tokens; exponential lengths: 1)")
    ("ttft-percentile", po::value<double>(), "capacity planning: check --ttft-target-ms at this percentile of TTFT + queueing wait (0 < P < 100; the M/M/c tail shape) instead of at the mean")
    ("sweep", po::value<std::string>(), "sweep mode: write all combinations to OUT.csv, OUT.h5 or - (CSV to stdout)")
    ("measure-cpu", po::value<std::string>(), "measure this CPU and write a hardware spec to OUT.json")
    ("threads", po::value<int>()->default_value(0), "--measure-cpu: threads for the all-thread figures (0 = all)")
    ("quick", "--measure-cpu: short measurement (less accurate)")
    ("name", po::value<std::string>(), "--measure-cpu: hardware name to write (default cpu-local)")
    ("calibrate", po::value<std::string>(), "fit efficiency/overhead terms to measured step timings: a JSON or CSV set, or sets on one platform A.json,B.json (held out by source with --cross-validate)")
    ("calibrate-traces", po::value<std::string>(), "like --calibrate, from recorded traces T1.h5,T2.h5,... (timed steps; needs --hardware)")
    ("fit", po::value<std::string>(), "--calibrate: parameters to fit (comma list; 'engine' / 'hardware' = that side's defaults; default: both, as the data allows)")
    ("output", po::value<std::string>(), "--calibrate: write the calibrated hardware spec here")
    ("engine-output", po::value<std::string>(), "--calibrate: write the calibrated engine spec here")
    ("cross-validate", "--calibrate: also report held-out errors (leave one source out when rows name several, else leave one row out)")
    ("evaluate", po::value<std::string>(), "predict the published speedups of an evaluation set (JSON) or of every set in a directory, e.g. simulator/evaluation; never fitted")
    ("specs-dir", po::value<std::vector<std::string>>(), "extra spec directory with hardware/, engines/, models/, drafters/ (repeatable)")
    ("list", "list the available specs");
  // clang-format on
  po::variables_map vm;
  try {
    po::command_line_parser parser(args);
    parser.options(desc);
    po::store(parse_known_options(parser, desc), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw Error(std::string("simulate: ") + e.what() + " (see specdec simulate --help)");
  }
  if (vm.count("help")) return usage(io.out, desc);

  std::vector<std::filesystem::path> dirs;
  if (vm.count("specs-dir"))
    for (const auto& d : vm["specs-dir"].as<std::vector<std::string>>()) {
      if (!std::filesystem::is_directory(d)) throw Error("--specs-dir: '" + d + "' is not a directory");
      dirs.push_back(d);
    }
  const SpecLibrary specs(dirs);

  if (vm.count("list")) {
    for (const char* kind : {"hardware", "engines", "models", "drafters"}) {
      io.out << kind << ":";
      for (const auto& n : specs.names(kind)) io.out << " " << n;
      io.out << "\n";
    }
    for (const auto& n : specs.names("drafters")) {
      const DrafterSpec d = specs.drafter_spec(n);
      if (draft_free(d.method) || !d.categories.empty())
        io.out << "categories of " << n << " (--category): " << d.category_list() << "\n";
    }
    return 0;
  }
  if (vm.count("evaluate")) {
    for (const char* o : {"calibrate", "calibrate-traces", "sweep", "measure-cpu"})
      if (vm.count(o))
        throw Error(std::string("--evaluate predicts published results without fitting: it cannot be combined with --") + o);
    return run_evaluate(vm, specs, io);
  }
  if (vm.count("measure-cpu")) return run_measure_cpu(vm, io);
  if (vm.count("calibrate") || vm.count("calibrate-traces")) return run_calibrate(vm, specs, io);
  if (vm.count("sweep")) return run_sweep_mode(vm, specs, io);
  if (vm.count("any-target")) throw Error("--any-target is for --sweep (one --drafter and --model are priced as given)");

  if (!vm.count("model")) throw Error("simulate: --model is required (a spec name or a config.json path; see --list)");
  if (!vm.count("hardware")) throw Error("simulate: --hardware is required (see --list)");
  const bool policy_mode = vm.count("policy") || vm.count("recommend-policy");
  const std::vector<int> batches = policy_mode ? parse_int_list(vm["batch"].as<std::string>(), "batch", kMaxSimulatedBatch)
                                               : std::vector<int>{parse_int(vm["batch"].as<std::string>(), "batch")};
  const ScenarioOptions o = scenario_options(vm, batches.front());
  // Several drafters: capacity planning across their methods.
  if (o.drafter && o.drafter->find(',') != std::string::npos) {
    if (!o.capacity || policy_mode)
      throw Error("--drafter takes one drafter here; a list is for capacity planning (--capacity-rate and --tpot-target-ms) "
                  "and --sweep");
    const CapacityComparison c = compare_capacity(o, split_list(*o.drafter), specs, kCommandLineSpelling);
    if (vm.count("json")) {
      nlohmann::json out;
      capacity_comparison_json(c, out);
      io.out << out.dump(2) << "\n";
    } else {
      print_capacity_comparison(c, io.out);
    }
    return 0;
  }
  BuiltScenario built = build_scenario(o, specs, kCommandLineSpelling);
  if (policy_mode) return cli::policy_mode(vm, o, built.scenario, batches, io);
  const SimulateResult r = simulate_modes(o, std::move(built), kCommandLineSpelling);
  const Scenario& s = r.built.scenario;
  const Prediction& p = r.prediction;

  if (vm.count("json")) {
    nlohmann::json out = simulate_json(r, o.breakdown);
    if (o.capacity) run_capacity_plan(o, s, specs, &out, io.out);
    io.out << out.dump(2) << "\n";
    return 0;
  }
  auto print_skipped = [&](const std::vector<SkippedSetting>& skipped) {
    for (const auto& k : skipped) io.out << "not evaluated: " << k.setting << ": " << k.reason << "\n";
    io.out << (skipped.empty() ? "" : "\n");
  };
  if (r.best_k) {
    const BestK& b = *r.best_k;
    io.out << "K   AL      TPOT ms   speedup\n";
    for (const auto& q : b.all)
      io.out << std::left << std::setw(4) << q.k << std::setw(8) << fmt(q.tokens_per_step, 3) << std::setw(10)
             << fmt(q.tpot_s * 1e3, 3) << fmt(q.speedup, 3) << (q.k == b.k ? "  <- best" : "") << "\n";
    io.out << "\n";
    print_skipped(b.skipped);
  } else if (r.best_tree) {
    const BestTree& b = *r.best_tree;
    auto is_best = [&](const DynamicTreeSetting& t) {
      return t.total_tokens == b.setting.total_tokens && t.depth == b.setting.depth && t.top_k == b.setting.top_k;
    };
    io.out << "total depth top-k nodes AL      TPOT ms   speedup\n";
    for (const auto& c : b.all)
      io.out << std::left << std::setw(6) << c.setting.total_tokens << std::setw(6) << c.setting.depth << std::setw(6)
             << c.setting.top_k << std::setw(6) << c.prediction.tree_nodes << std::setw(8)
             << fmt(c.prediction.tokens_per_step, 3) << std::setw(10) << fmt(c.prediction.tpot_s * 1e3, 3)
             << fmt(c.prediction.speedup, 3) << (is_best(c.setting) ? "  <- best" : "") << "\n";
    io.out << "\n";
    print_skipped(b.skipped);
  }
  if (!r.built.k_note.empty()) io.out << "note: " << r.built.k_note << "\n";
  print_prediction(io.out, s, p, r.built.measured_note);
  if (o.breakdown) print_breakdown(io.out, p);

  if (r.batching) {
    const BatchingPrediction& b = *r.batching;
    auto line = [&](const std::string& k, const std::string& v) { io.out << "  " << std::left << std::setw(34) << k << v << "\n"; };
    io.out << "\n" << batching_name(b.mode) << " batching, " << (b.mode == Batching::continuous ? "concurrency " : "batch ")
           << b.sequences << " (tokens per step " << fmt(b.tokens_per_step, 3) << " ± " << fmt(b.tokens_per_step_sd, 3) << "):\n";
    if (b.mode == Batching::static_batch) {
      line("steps until the batch is done", fmt(b.steps, 1) + " (" + fmt(b.ragged_factor, 3) + "x the mean sequence's)");
    } else {
      line(s.engine.interleaves_prefill ? "step + interleaved prefill" : "step + prefill between steps",
           fmt(b.step_s * 1e3, 3) + " + " + fmt(b.prefill_per_step_s * 1e3, 3) + " ms");
    }
    line("per-request TPOT", fmt(b.tpot_s * 1e3, 3) + " ms (sequential " + fmt(b.sequential_tpot_s * 1e3, 3) + " ms)");
    line("throughput (per replica)", fmt(b.throughput_tokens_per_s, 1) + " tokens/s (sequential " +
                                         fmt(b.sequential_throughput_tokens_per_s, 1) + ")");
    line("speedup", fmt(b.speedup, 3) + "x");
  }
  if (o.capacity) run_capacity_plan(o, s, specs, nullptr, io.out);
  return 0;
}

}  // namespace specdec::cli
