#include "simulator/evaluation.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "reference/core/error.hpp"
#include "simulator/plan_json.hpp"
#include "simulator/spec_json.hpp"

namespace specdec::sim {

namespace {

const std::vector<std::string> kRowFields = {
    "label",    "model",      "drafter",    "method", "k",     "tree",     "dynamic_tree",
    "batch",    "prompt_len", "output_len", "tp",     "dp_attention", "ep", "dtype", "hardware", "engine", "engine_version",
    "acceptance_length", "speedup", "throughput", "baseline_throughput", "versus", "quote", "missing_spec", "match_rate"};

// The speculative configuration of `r` into `s`, whose target, hardware, engine and workload are
// already set.
void parse_plan(const nlohmann::json& r, const std::string& where, const SpecLibrary& specs, Scenario& s) {
  if (!has_field(r, "method"))
    throw Error(where + ": 'method' is missing (draft, eagle, eagle3 or peagle: a published speedup is of a speculative method)");
  if (parse_method(get_string(r, "method", where), where) == Method::sequential)
    throw Error(where + ": method 'sequential' has no speedup to evaluate");
  parse_measured_plan(r, where, specs, s);
  validate_scenario(s);
}

const std::vector<std::string> kVersusFields = {"method", "drafter", "k", "tree", "dynamic_tree", "acceptance_length"};

PublishedResult parse_row(const nlohmann::json& r, const std::string& where, const SpecLibrary& specs,
                          const std::string& hardware, const std::string& engine, const OptionSpelling& sp) {
  PublishedResult row;
  Scenario& s = row.scenario;
  const std::string hw = hardware.empty() ? get_string_or(r, "hardware", "", where) : hardware;
  if (hw.empty()) throw Error(where + ": no hardware: name it in the row or the set ('hardware'), or give " + sp("hardware"));
  s.hardware = specs.hardware(hw);
  s.engine = specs.engine_for(engine.empty() ? get_string_or(r, "engine", "", where) : engine, s.hardware);
  // The release the source ran, where it names one (selects the engine's overlap behaviour then).
  s.engine_version = get_string_or(r, "engine_version", "", where);
  if (!s.engine_version.empty()) parse_engine_version(s.engine_version, where + " 'engine_version'");
  s.target = specs.model(get_string(r, "model", where));
  s.workload = parse_measured_workload(r, where);
  if (has_field(r, "versus")) {
    // A speedup over another speculative configuration of the same target, platform and workload.
    const nlohmann::json& v = r.at("versus");
    if (!v.is_object()) throw Error(where + ": 'versus' must be an object (method, drafter, k | tree | dynamic_tree, acceptance_length)");
    check_known_fields(v, kVersusFields, where + " 'versus'");
    Scenario base = s;
    parse_plan(v, where + " 'versus'", specs, base);
    row.versus = base;
  }
  parse_plan(r, where, specs, s);

  const bool speedup = has_field(r, "speedup");
  const bool throughput = has_field(r, "throughput") || has_field(r, "baseline_throughput");
  if (speedup == throughput)
    throw Error(where + ": give exactly one of 'speedup' and the pair 'throughput' + 'baseline_throughput'");
  if (speedup) {
    row.published_speedup = get_number(r, "speedup", where);
    require_positive(row.published_speedup, "speedup", where);
  } else {
    const double t = get_number(r, "throughput", where), b = get_number(r, "baseline_throughput", where);
    require_positive(t, "throughput", where);
    require_positive(b, "baseline_throughput", where);
    row.published_speedup = t / b;
  }

  row.label = get_string_or(r, "label", "", where);
  if (row.label.empty()) {
    std::ostringstream l;
    l << s.target.name << " " << method_name(s.plan.method);
    if (s.plan.tree) l << " tree(" << s.plan.tree->size() << ")";
    else l << " K=" << s.plan.k;
    l << " B=" << s.workload.batch;
    if (row.versus) l << " vs " << method_name(row.versus->plan.method);
    row.label = l.str();
  }
  return row;
}

}  // namespace

EvaluationSet parse_evaluation_json(const nlohmann::json& j, const std::string& source, const SpecLibrary& specs,
                                    const std::string& hardware, const std::string& engine, const OptionSpelling& sp) {
  if (!j.is_object()) throw Error(source + ": expected an object with 'rows'");
  check_known_fields(j, {"reserved", "hardware", "engine", "defaults", "rows"}, source);
  EvaluationSet set;
  set.source = get_string_or(j, "source", source, source);
  set.reserved = get_bool_or(j, "reserved", false, source);
  nlohmann::json defaults = nlohmann::json::object();
  if (has_field(j, "defaults")) {
    defaults = j.at("defaults");
    if (!defaults.is_object()) throw Error(source + ": 'defaults' must be an object of row fields");
    check_known_fields(defaults, kRowFields, source + " (defaults)");
  }
  for (const char* k : {"hardware", "engine"})
    if (has_field(j, k)) defaults[k] = get_string(j, k, source);
  for (const auto& [where, merged] : rows_over_defaults(j, defaults, source, "published results")) {
    check_known_fields(merged, kRowFields, where);
    if (has_field(merged, "missing_spec")) {
      set.skipped.push_back({get_string_or(merged, "label", where, where), get_string(merged, "missing_spec", where)});
      continue;
    }
    set.rows.push_back(parse_row(merged, where, specs, hardware, engine, sp));
  }
  return set;
}

EvaluationSet load_evaluation_set(const std::filesystem::path& path, const SpecLibrary& specs,
                                  const std::string& hardware, const std::string& engine, const OptionSpelling& sp) {
  EvaluationSet set =
      parse_evaluation_json(read_json_file(path, "evaluation set"), path.filename().string(), specs, hardware, engine, sp);
  set.name = path.stem().string();
  return set;
}

std::vector<EvaluationSet> load_evaluation_sets(const std::filesystem::path& path, const SpecLibrary& specs,
                                                const std::string& hardware, const std::string& engine,
                                                const OptionSpelling& sp) {
  std::vector<EvaluationSet> out;
  if (!std::filesystem::is_directory(path)) {
    out.push_back(load_evaluation_set(path, specs, hardware, engine, sp));
    return out;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(path))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw Error("evaluation directory '" + path.string() + "' holds no .json sets");
  for (const auto& f : files) out.push_back(load_evaluation_set(f, specs, hardware, engine, sp));
  return out;
}

namespace {
void summarise(EvaluationResult& r) {
  double sq = 0, sum = 0, sum_abs = 0;
  r.max_abs_error = 0;
  for (const auto& row : r.rows) {
    r.max_abs_error = std::max(r.max_abs_error, std::fabs(row.relative_error));
    sum += row.relative_error;
    sum_abs += std::fabs(row.relative_error);
    sq += std::pow(std::log(row.predicted_speedup / row.published_speedup), 2);
  }
  r.mean_error = r.rows.empty() ? 0 : sum / double(r.rows.size());
  r.mean_abs_error = r.rows.empty() ? 0 : sum_abs / double(r.rows.size());
  r.rms_log_error = r.rows.empty() ? 0 : std::sqrt(sq / double(r.rows.size()));
}
}  // namespace

EvaluationResult evaluate_published(const EvaluationSet& set) {
  EvaluationResult r;
  r.name = set.name;
  r.source = set.source;
  r.skipped = set.skipped;
  for (const auto& row : set.rows) {
    const Prediction p = predict(row.scenario, false);
    // Over plain decoding, or over the `versus` configuration (the ratio of their TPOTs).
    const double predicted = row.versus ? predict(*row.versus, false).tpot_s / p.tpot_s : p.speedup;
    EvaluationRowResult out;
    out.label = row.label;
    out.hardware = row.scenario.hardware.name;
    out.engine = row.scenario.engine.name;
    out.acceptance_length = p.tokens_per_step;
    out.published_speedup = row.published_speedup;
    out.predicted_speedup = predicted;
    out.relative_error = (predicted - row.published_speedup) / row.published_speedup;
    r.rows.push_back(out);
  }
  summarise(r);
  return r;
}

EvaluationResult pool_evaluations(const std::vector<EvaluationResult>& results) {
  EvaluationResult all;
  all.name = "all";
  all.source = "all sets";
  for (const auto& r : results) {
    all.rows.insert(all.rows.end(), r.rows.begin(), r.rows.end());
    all.skipped.insert(all.skipped.end(), r.skipped.begin(), r.skipped.end());
  }
  summarise(all);
  return all;
}

Evaluation evaluate_published_path(const std::filesystem::path& path, const SpecLibrary& specs, const std::string& hardware,
                                   const std::string& engine, const OptionSpelling& sp) {
  Evaluation e;
  for (const auto& set : load_evaluation_sets(path, specs, hardware, engine, sp)) e.sets.push_back(evaluate_published(set));
  e.all = pool_evaluations(e.sets);
  return e;
}

nlohmann::json evaluation_json(const Evaluation& e) {
  auto summary = [](const EvaluationResult& r) {
    nlohmann::json s = {{"set", r.name},
                        {"source", r.source},
                        {"results", r.rows.size()},
                        {"max_abs_relative_error", r.max_abs_error},
                        {"mean_relative_error", r.mean_error},
                        {"mean_abs_relative_error", r.mean_abs_error},
                        {"rms_log_error", r.rms_log_error}};
    for (const auto& k : r.skipped) s["skipped"].push_back({{"label", k.label}, {"reason", k.reason}});
    return s;
  };
  nlohmann::json j;
  for (const auto& r : e.sets) {
    nlohmann::json set = summary(r);
    for (const auto& row : r.rows)
      set["rows"].push_back({{"label", row.label}, {"hardware", row.hardware}, {"engine", row.engine},
                             {"acceptance_length", row.acceptance_length},
                             {"published_speedup", row.published_speedup},
                             {"predicted_speedup", row.predicted_speedup}, {"relative_error", row.relative_error}});
    j["sets"].push_back(set);
  }
  j["all"] = summary(e.all);
  return j;
}

}  // namespace specdec::sim
