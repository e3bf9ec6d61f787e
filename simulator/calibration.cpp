#include "simulator/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "reference/core/error.hpp"
#include "reference/io/input_file.hpp"
#include "reference/decoding/generation.hpp"
#include "simulator/nelder_mead.hpp"
#include "simulator/plan_json.hpp"
#include "simulator/spec_json.hpp"

namespace specdec::sim {

namespace {

const std::vector<std::string> kRowFields = {"label", "source", "model",   "drafter", "method", "k",
                                             "batch", "prompt_len", "output_len", "context", "tp",
                                             "dtype", "acceptance_length", "step_ms", "tpot_ms", "quote",
                                             "tree", "dynamic_tree", "match_rate", "engine_version"};

constexpr double kMinMeasuredMs = 1e-6, kMaxMeasuredMs = 1e6;
// Where a fit of the per-row host time's saturation starts when the engine gives none: 256 rows
// (batch 64 × 4 verified rows, the largest the bundled sets measure), so the search starts from
// the linear curve the engine had and bends it only as far as the data asks.
constexpr double kSaturationStartRows = 256;

// The configuration a row measured, and by whom: its fields but the measurement and its
// description. Two rows with the same key are one point given twice by one source (a copy-paste
// slip that would weigh it double); two sources measuring one configuration are not duplicates.
std::string configuration_key(nlohmann::json r) {
  for (const char* f : {"label", "quote", "step_ms", "tpot_ms", "comment", "description", "sources"}) r.erase(f);
  for (auto it = r.begin(); it != r.end();) it = (!it.key().empty() && it.key()[0] == '_') ? r.erase(it) : std::next(it);
  return r.dump();
}

// Refuses a row whose configuration an earlier row of the same set already measured.
void check_distinct(std::map<std::string, std::string>& seen, const nlohmann::json& r, const std::string& where) {
  const auto [it, fresh] = seen.emplace(configuration_key(r), where);
  if (!fresh)
    throw Error(where + ": the same configuration as " + it->second +
                " (a duplicate point); give each configuration once (several measurements: their mean)");
}

MeasuredConfig parse_row(const nlohmann::json& r, const std::string& where, const SpecLibrary& specs) {
  check_known_fields(r, kRowFields, where);
  MeasuredConfig row;
  Scenario& s = row.scenario;
  s.plan.method = parse_method(get_string_or(r, "method", "sequential", where), where);
  s.target = specs.model(get_string(r, "model", where));
  s.workload = parse_measured_workload(r, where);
  // The engine's release the row was measured on, where the source names it (the engine itself is
  // the set's: calibration fits one engine's terms).
  s.engine_version = get_string_or(r, "engine_version", "", where);
  if (!s.engine_version.empty()) parse_engine_version(s.engine_version, where + " 'engine_version'");
  row.context = get_number_or(r, "context", s.workload.prompt_len + 0.5 * s.workload.output_len, where);
  require_in_range(row.context, "context", where, 0.0, double(kMaxPositions), true, "cached tokens");
  if (s.plan.method != Method::sequential) row.tokens_per_step = parse_measured_plan(r, where, specs, s);
  const bool step = has_field(r, "step_ms"), tpot = has_field(r, "tpot_ms");
  if (step == tpot) throw Error(where + ": give exactly one of 'step_ms' and 'tpot_ms'");
  const double ms = get_number(r, step ? "step_ms" : "tpot_ms", where);
  // A measured step between a nanosecond and a quarter of an hour: anything else is a unit slip or
  // a corrupt file, and would drag the log-error fit anywhere.
  require_in_range(ms, step ? "step_ms" : "tpot_ms", where, kMinMeasuredMs, kMaxMeasuredMs, false, "ms");
  row.given_as_tpot = tpot;
  row.measured_step_s = (tpot ? ms * row.tokens_per_step : ms) * 1e-3;
  row.label = get_string_or(r, "label", "", where);
  row.source = get_string_or(r, "source", "", where);
  if (row.label.empty()) {
    std::ostringstream l;
    l << s.target.name << " " << method_name(s.plan.method);
    if (s.plan.tree) l << " tree(" << s.plan.tree->size() << ")";
    else if (s.plan.method != Method::sequential) l << " K=" << s.plan.k;
    l << " B=" << s.workload.batch;
    if (s.workload.tp > 1) l << " TP=" << s.workload.tp;
    row.label = l.str();
  }
  return row;
}

struct Transform {
  bool logistic;  // efficiencies in (0, 1]; overheads positive
  double offset;  // the overlap exponent: offset + a positive number
  double to_x(double v) const {
    if (logistic) {
      v = std::clamp(v, 1e-6, 1.0 - 1e-9);
      return std::log(v / (1.0 - v));
    }
    if (offset > 0 && v == 0) v = 8.0;  // perfect overlap (0): start from an exponent close to it
    return std::log(std::max(v - offset, 1e-9));
  }
  double from_x(double x) const { return logistic ? 1.0 / (1.0 + std::exp(-x)) : offset + std::exp(x); }
};

Transform transform_for(const std::string& name) {
  return {name.find("efficiency") != std::string::npos, name == "overlap_exponent" ? 1.0 : 0.0};
}

}  // namespace

// Whether every row of `set` runs in the same host-work range of `engine` (its engine_version).
static bool one_host_work_range(const CalibrationSet& set, const EngineSpec& engine) {
  const HostWork* first = nullptr;
  for (const auto& r : set.rows) {
    const HostWork* h = &engine.host_work_for(r.scenario.engine_version);
    if (first && h != first) return false;
    first = h;
  }
  return true;
}

std::vector<std::string> default_fit_parameters(const CalibrationSet& set, const EngineSpec& engine) {
  std::vector<std::string> p = {"memory_efficiency", "compute_efficiency", "kernel_floor_s", "step_overhead_s"};
  if (!engine.cuda_graphs) p.push_back("kernel_launch_s");
  bool tp = false;
  std::set<std::string> methods;
  std::set<int> batches, plain_batches, spec_batches;
  for (const auto& r : set.rows) {
    tp = tp || r.scenario.workload.tp > 1;
    batches.insert(r.scenario.workload.batch);
    (r.scenario.plan.method == Method::sequential ? plain_batches : spec_batches).insert(r.scenario.workload.batch);
    if (r.scenario.plan.method != Method::sequential) methods.insert(method_name(r.scenario.plan.method));
  }
  if (tp) {
    p.push_back("comm_latency_s");
    p.push_back("interconnect_efficiency");
  }
  // Host time per verified row of each sequence (sampling, the acceptance test) grows with the
  // batch while the per-step terms do not: only rows at several batch sizes can tell them apart.
  if (batches.size() > 1) p.push_back("sampling_s_per_row");
  // Where it saturates is a second parameter of the same curve: three batch sizes at least.
  if (batches.size() > 2) p.push_back("sampling_saturation_rows");
  // Host work per running request grows with the batch as the per-row term does, but a speculative
  // step verifies K + 1 rows per request where a plain step verifies one: plain and speculative rows
  // each at several batch sizes tell the two apart.
  // It is a term of the release the rows ran: fitted by default only where they all ran in one
  // host-work range of the engine.
  if (plain_batches.size() > 1 && spec_batches.size() > 1 && one_host_work_range(set, engine))
    p.push_back("request_overhead_s");
  // Dynamic trees of several sizes separate a tree's per-node host time from its per-step time.
  std::set<int> dynamic_sizes;
  for (const auto& r : set.rows)
    if (r.scenario.plan.tree && r.scenario.plan.dynamic_depth > 0) dynamic_sizes.insert(r.scenario.plan.tree->size());
  if (dynamic_sizes.size() > 1) {
    p.push_back("tree_step_s");
    p.push_back("tree_node_s");
  }
  for (const auto& m : methods) {
    p.push_back("draft_step_overhead_s." + m);
    p.push_back("spec_step_overhead_s." + m);
  }
  return p;
}

bool is_engine_parameter(const std::string& name) {
  return name == "step_overhead_s" || name == "request_overhead_s" || name == "kernel_launch_s" || name == "sampling_s_per_row" ||
         name == "sampling_saturation_rows" || name == "tree_step_s" || name == "tree_level_s" ||
         name == "tree_node_s" ||
         name.rfind("draft_step_overhead_s.", 0) == 0 || name.rfind("spec_step_overhead_s.", 0) == 0;
}

std::vector<std::string> expand_fit_groups(const std::vector<std::string>& params, const CalibrationSet& set,
                                           const EngineSpec& engine) {
  std::vector<std::string> out;
  for (const auto& p : params) {
    if (p == "engine" || p == "hardware") {
      for (const auto& d : default_fit_parameters(set, engine))
        if (is_engine_parameter(d) == (p == "engine") && std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
    } else if (std::find(out.begin(), out.end(), p) == out.end()) {
      out.push_back(p);
    }
  }
  return out;
}

static std::map<std::string, double>* method_map(EngineSpec& e, const std::string& name, std::string* method) {
  for (auto [prefix, map] : {std::pair{"draft_step_overhead_s.", &e.draft_step_overhead_s},
                             std::pair{"spec_step_overhead_s.", &e.spec_step_overhead_s}}) {
    const std::string pre = prefix;
    if (name.rfind(pre, 0) == 0) {
      // The overhead maps are keyed by method_name (older spellings such as eagle1 map onto it).
      *method = method_name(parse_method(name.substr(pre.size()), "calibration parameter '" + name + "'"));
      return map;
    }
  }
  return nullptr;
}

double get_parameter(const Platform& p_in, const std::string& name) {
  Platform& p = const_cast<Platform&>(p_in);
  const HardwareSpec& h = p.hardware;
  if (name == "compute_efficiency") return h.compute_efficiency;
  if (name == "memory_efficiency") return h.memory_efficiency;
  if (name == "interconnect_efficiency") return h.interconnect_efficiency;
  if (name == "kernel_floor_s") return h.kernel_floor_s;
  if (name == "comm_latency_s") return h.comm_latency_s;
  if (name == "overlap_exponent") return h.overlap_exponent;
  if (name == "step_overhead_s") return p.engine.step_overhead_s;
  if (name == "request_overhead_s") return p.engine.host_work_for(p.engine_version).request_s;
  if (name == "sampling_s_per_row") return p.engine.sampling_s_per_row;
  if (name == "sampling_saturation_rows") return p.engine.sampling_saturation_rows;
  if (name == "tree_step_s") return p.engine.tree_cost.per_step_s;
  if (name == "tree_level_s") return p.engine.tree_cost.per_level_s;
  if (name == "tree_node_s") return p.engine.tree_cost.per_node_s;
  if (name == "kernel_launch_s") return p.engine.kernel_launch_s;
  std::string method;
  if (method_map(p.engine, name, &method)) {
    return name.rfind("draft", 0) == 0 ? p_in.engine.draft_step_overhead(method) : p_in.engine.spec_step_overhead(method);
  }
  throw Error("unknown calibration parameter '" + name +
              "'; expected (hardware) compute_efficiency, memory_efficiency, interconnect_efficiency, kernel_floor_s, "
              "comm_latency_s, overlap_exponent or (engine) step_overhead_s, request_overhead_s, kernel_launch_s, "
              "sampling_s_per_row, "
              "sampling_saturation_rows, tree_step_s, tree_level_s, tree_node_s, "
              "draft_step_overhead_s.<method>, spec_step_overhead_s.<method>");
}

void set_parameter(Platform& p, const std::string& name, double value) {
  get_parameter(p, name);  // validates the name
  HardwareSpec& h = p.hardware;
  if (name == "compute_efficiency") h.compute_efficiency = value;
  else if (name == "memory_efficiency") h.memory_efficiency = value;
  else if (name == "interconnect_efficiency") h.interconnect_efficiency = value;
  else if (name == "kernel_floor_s") h.kernel_floor_s = value;
  else if (name == "comm_latency_s") h.comm_latency_s = value;
  else if (name == "overlap_exponent") h.overlap_exponent = std::clamp(value, 1.0, 64.0);
  else if (name == "step_overhead_s") p.engine.step_overhead_s = value;
  else if (name == "request_overhead_s") p.engine.host_work_for(p.engine_version).request_s = value;
  else if (name == "sampling_s_per_row") p.engine.sampling_s_per_row = value;
  else if (name == "sampling_saturation_rows") p.engine.sampling_saturation_rows = value;
  else if (name == "tree_step_s") p.engine.tree_cost.per_step_s = value;
  else if (name == "tree_level_s") p.engine.tree_cost.per_level_s = value;
  else if (name == "tree_node_s") p.engine.tree_cost.per_node_s = value;
  else if (name == "kernel_launch_s") p.engine.kernel_launch_s = value;
  else {
    std::string method;
    (*method_map(p.engine, name, &method))[method] = value;
  }
}

Platform platform_for(const CalibrationSet& set, const SpecLibrary& specs, const std::string& hardware,
                      const std::string& engine) {
  const std::string hw = hardware.empty() ? set.hardware : hardware;
  if (hw.empty())
    throw Error("calibration set '" + set.source + "' names no hardware: give one (--hardware)");
  Platform p;
  p.hardware = specs.hardware(hw);
  p.engine = specs.engine_for(engine.empty() ? set.engine : engine, p.hardware);
  return p;
}

CalibrationSet parse_calibration_json(const nlohmann::json& j, const std::string& source, const SpecLibrary& specs) {
  // Published results kept for independent evaluation (simulator/evaluation) are never fitted.
  if (j.is_object() && j.contains("reserved") && j.at("reserved") == true)
    throw Error(source + ": this set is reserved for independent evaluation (\"reserved\": true); it cannot be "
                "calibrated against. Evaluate it with specdec simulate --evaluate (Python: specdec.evaluate)");
  check_known_fields(j, {"reserved", "hardware", "engine", "fit", "defaults", "rows"}, source);
  CalibrationSet set;
  set.source = get_string_or(j, "source", source, source);
  set.hardware = get_string_or(j, "hardware", "", source);
  set.engine = get_string_or(j, "engine", "", source);
  if (has_field(j, "fit")) {
    if (!j.at("fit").is_array()) throw Error(source + ": 'fit' must be a list of parameter names");
    for (const auto& p : j.at("fit")) {
      if (!p.is_string()) throw Error(source + ": 'fit' entries must be strings");
      set.fit.push_back(p.get<std::string>());
    }
  }
  nlohmann::json defaults = nlohmann::json::object();
  if (has_field(j, "defaults")) {
    defaults = j.at("defaults");
    check_known_fields(defaults, kRowFields, source + " (defaults)");
  }
  std::map<std::string, std::string> seen;
  for (const auto& [where, row] : rows_over_defaults(j, defaults, source, "measured configurations")) {
    set.rows.push_back(parse_row(row, where, specs));
    check_distinct(seen, row, where);
  }
  return set;
}

CalibrationSet parse_calibration_csv(const std::string& text, const std::string& source, const SpecLibrary& specs) {
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  auto split = [](const std::string& l) {
    std::vector<std::string> out;
    std::string cell;
    std::istringstream s(l);
    while (std::getline(s, cell, ',')) {
      const auto b = cell.find_first_not_of(" \t\r"), e = cell.find_last_not_of(" \t\r");
      out.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    }
    if (!l.empty() && l.back() == ',') out.push_back("");
    return out;
  };
  CalibrationSet set;
  set.source = source;
  std::map<std::string, std::string> seen;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[0] == '#') continue;
    auto cells = split(line);
    if (header.empty()) {
      header = cells;
      for (const auto& h : header) {
        bool known = false;
        for (const auto& f : kRowFields) known = known || f == h;
        if (!known) throw Error(source + " line " + std::to_string(line_no) + ": unknown column '" + h + "'");
      }
      continue;
    }
    const std::string where = source + " line " + std::to_string(line_no);
    if (cells.size() != header.size())
      throw Error(where + ": " + std::to_string(cells.size()) + " cells, the header has " +
                  std::to_string(header.size()));
    nlohmann::json r = nlohmann::json::object();
    for (size_t c = 0; c < cells.size(); ++c) {
      if (cells[c].empty()) continue;
      const std::string& key = header[c];
      if (key == "label" || key == "source" || key == "model" || key == "drafter" || key == "method" || key == "dtype" ||
          key == "quote" || key == "tree") {
        r[key] = cells[c];  // a tree by its built-in name
      } else if (key == "dynamic_tree") {
        // TOTAL/DEPTH/TOP_K (a comma would split the cell)
        nlohmann::json t = nlohmann::json::array();
        std::istringstream parts(cells[c]);
        for (std::string v; std::getline(parts, v, '/');) {
          try {
            size_t used = 0;
            t.push_back(std::stoi(v, &used));
            if (used != v.size()) throw std::invalid_argument("trailing");
          } catch (const std::exception&) {
            throw Error(where + ": column 'dynamic_tree' must be TOTAL/DEPTH/TOP_K, e.g. 64/8/8, got '" + cells[c] + "'");
          }
        }
        r[key] = t;
      } else {
        try {
          size_t used = 0;
          const double v = std::stod(cells[c], &used);
          if (used != cells[c].size()) throw std::invalid_argument("trailing");
          r[key] = v;
        } catch (const std::exception&) {
          throw Error(where + ": column '" + key + "' must be a number, got '" + cells[c] + "'");
        }
      }
    }
    set.rows.push_back(parse_row(r, where, specs));
    check_distinct(seen, r, where);
  }
  if (set.rows.empty()) throw Error(source + ": no measured configurations (a header line and at least one row)");
  return set;
}

CalibrationSet load_calibration_set(const std::filesystem::path& path, const SpecLibrary& specs) {
  const std::string name = path.filename().string();
  if (path.extension() == ".csv") {
    return parse_calibration_csv(read_input_file(path.string(), "calibration set"), name, specs);
  }
  return parse_calibration_json(read_json_file(path, "calibration set"), name, specs);
}

CalibrationSet merge_calibration_sets(const std::vector<CalibrationSet>& sets) {
  if (sets.empty()) throw Error("calibration: no sets to merge");
  if (sets.size() == 1) return sets.front();
  CalibrationSet out;
  for (const auto& s : sets) {
    for (auto [field, mine, theirs] : {std::tuple{"hardware", &out.hardware, &s.hardware},
                                       std::tuple{"engine", &out.engine, &s.engine}}) {
      if (mine->empty()) *mine = *theirs;
      else if (!theirs->empty() && *theirs != *mine)
        throw Error("calibration sets on different platforms cannot be fitted together: '" + s.source + "' names " +
                    field + " '" + *theirs + "', an earlier set '" + *mine + "'");
    }
    out.source += (out.source.empty() ? "" : " + ") + s.source;
    for (const auto& p : s.fit)
      if (std::find(out.fit.begin(), out.fit.end(), p) == out.fit.end()) out.fit.push_back(p);
    for (MeasuredConfig row : s.rows) {
      if (row.source.empty()) row.source = s.source;
      out.rows.push_back(std::move(row));
    }
  }
  return out;
}

double predicted_step_s(const MeasuredConfig& row, const Platform& p) {
  Scenario s = row.scenario;
  s.hardware = p.hardware;
  s.engine = p.engine;
  return decode_step_cost(s, row.context, row.tokens_per_step).total_s();
}

CalibrationResult evaluate_calibration(const CalibrationSet& set, const Platform& p) {
  CalibrationResult r;
  r.hardware = p.hardware;
  r.engine = p.engine;
  double sq = 0;
  for (const auto& row : set.rows) {
    Scenario s = row.scenario;
    s.hardware = p.hardware;
    s.engine = p.engine;
    validate_scenario(s);
    const double pred = predicted_step_s(row, p);
    require_finite_result(pred, "step time", "calibration row '" + row.label + "'");
    if (!(pred > 0)) throw Error("calibration row '" + row.label + "': the predicted step time is not > 0");
    const double scale = row.given_as_tpot ? 1.0 / row.tokens_per_step : 1.0;
    CalibrationRowResult out{row.label, row.measured_step_s * scale, pred * scale, 0};
    out.relative_error = (out.predicted_s - out.measured_s) / out.measured_s;
    r.max_abs_error = std::max(r.max_abs_error, std::fabs(out.relative_error));
    sq += std::pow(std::log(pred / row.measured_step_s), 2);
    r.rows.push_back(out);
  }
  r.rms_log_error = set.rows.empty() ? 0 : std::sqrt(sq / set.rows.size());
  return r;
}

CalibrationResult calibrate(const CalibrationSet& set, const Platform& start, std::vector<std::string> params) {
  if (set.rows.empty()) throw Error("calibration: no measured configurations");
  if (params.empty()) params = set.fit.empty() ? default_fit_parameters(set, start.engine) : set.fit;
  params = expand_fit_groups(params, set, start.engine);
  Platform p0 = start;
  // The per-request host work is a term of one release range: the rows' (they must share one).
  if (std::find(params.begin(), params.end(), "request_overhead_s") != params.end()) {
    if (!one_host_work_range(set, start.engine))
      throw Error("calibration of " + set.source + ": request_overhead_s is a term of one release range of engine " +
                  start.engine.name + " (its host_work), but the rows' engine_version fall in several; fit the "
                  "releases' rows separately");
    p0.engine_version = set.rows.front().scenario.engine_version;
  }
  // Overheads that start at zero get a small positive start so the log transform can move them.
  std::vector<double> x0;
  for (const auto& p : params) {
    double v = get_parameter(p0, p);
    // No saturation (0) starts from a point beyond the rows most sets hold, nearly linear there.
    if (p == "sampling_saturation_rows" && v <= 0) v = kSaturationStartRows;
    if (!transform_for(p).logistic && transform_for(p).offset == 0 && v <= 0) v = 1e-6;
    // An efficiency at (or near) 1, as a freshly measured spec has, sits where the logistic is
    // flat: the search could not move it. Start such terms at 0.9 instead.
    if (transform_for(p).logistic && v > 0.9) v = 0.9;
    x0.push_back(transform_for(p).to_x(v));
  }
  for (const auto& row : set.rows) {
    Scenario s = row.scenario;
    s.hardware = p0.hardware;
    s.engine = p0.engine;
    validate_scenario(s);
  }
  // Weak prior towards the starting values: identifiable terms move freely, others stay put.
  // Overheads are pulled far more weakly: their log starts wherever the spec's guess was.
  std::vector<double> pull;
  for (const auto& p : params) pull.push_back(transform_for(p).logistic ? 1e-4 : 1e-7);
  auto apply = [&](const std::vector<double>& x, Platform& p) {
    for (size_t i = 0; i < params.size(); ++i) set_parameter(p, params[i], transform_for(params[i]).from_x(x[i]));
  };
  auto objective = [&](const std::vector<double>& x) {
    Platform p = p0;
    apply(x, p);
    double sum = 0;
    for (const auto& row : set.rows) sum += std::pow(std::log(predicted_step_s(row, p) / row.measured_step_s), 2);
    double prior = 0;
    for (size_t i = 0; i < x.size(); ++i) prior += pull[i] * (x[i] - x0[i]) * (x[i] - x0[i]);
    return sum / double(set.rows.size()) + prior;
  };
  const MinimizeResult m = nelder_mead(objective, x0, 0.7, 40000, 6);
  Platform fitted = p0;
  apply(m.x, fitted);
  CalibrationResult r = evaluate_calibration(set, fitted);
  r.parameters = params;
  for (size_t i = 0; i < params.size(); ++i) {
    r.before.push_back(get_parameter(p0, params[i]));
    r.after.push_back(get_parameter(fitted, params[i]));
    // Every term is an efficiency, an exponent or a time: a fit outside [0, inf) fitted nothing.
    if (!(std::isfinite(r.after[i]) && r.after[i] >= 0)) {
      std::ostringstream e;
      e << "calibration of " << set.source << ": the fitted " << params[i] << " is " << r.after[i]
        << " (not a finite number >= 0): the measured times cannot be fitted; check them for unit slips";
      throw Error(e.str());
    }
  }
  return r;
}

CrossValidation cross_validate(const CalibrationSet& set, const Platform& start, std::vector<std::string> params) {
  if (set.rows.size() < 2) throw Error("cross-validation needs at least 2 measured configurations, got " +
                                       std::to_string(set.rows.size()));
  std::vector<std::string> group(set.rows.size());
  for (size_t i = 0; i < set.rows.size(); ++i) group[i] = set.rows[i].source.empty() ? set.source : set.rows[i].source;
  CrossValidation cv;
  cv.grouping = std::set<std::string>(group.begin(), group.end()).size() > 1 ? "source" : "row";
  if (cv.grouping == "row")
    for (size_t i = 0; i < set.rows.size(); ++i) group[i] = set.rows[i].label + " #" + std::to_string(i);
  std::vector<std::string> folds;
  for (const auto& g : group)
    if (std::find(folds.begin(), folds.end(), g) == folds.end()) folds.push_back(g);
  double sq = 0;
  size_t n = 0;
  for (const auto& held : folds) {
    CalibrationSet train = set, test = set;
    train.rows.clear();
    test.rows.clear();
    for (size_t i = 0; i < set.rows.size(); ++i) (group[i] == held ? test : train).rows.push_back(set.rows[i]);
    const CalibrationResult fit = calibrate(train, start, params);
    const CalibrationResult out = evaluate_calibration(test, Platform{fit.hardware, fit.engine});
    CrossValidationFold f;
    f.held_out = cv.grouping == "source" ? held : test.rows[0].label;
    f.rows = out.rows;
    for (const auto& r : out.rows) {
      cv.max_abs_error = std::max(cv.max_abs_error, std::fabs(r.relative_error));
      sq += std::pow(std::log(r.predicted_s / r.measured_s), 2);
      ++n;
    }
    cv.folds.push_back(std::move(f));
  }
  cv.rms_log_error = std::sqrt(sq / double(n));
  return cv;
}

}  // namespace specdec::sim
