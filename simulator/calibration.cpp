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
                                             "batch", "prompt_len", "output_len", "context", "tp", "dp_attention", "ep",
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
  double offset;  // terms bounded below (the overlap exponent, a saturation point): offset + a positive number
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
  const std::string base = name.substr(0, name.find('@'));  // a release's term moves as the engine's
  // Terms bounded below by 1 (an exponent, a saturation point in rows) move above it.
  const bool from_one = base == "overlap_exponent" || base == "sampling_saturation_rows";
  return {base.find("efficiency") != std::string::npos, from_one ? 1.0 : 0.0};
}

}  // namespace

// The release scope of a row: the version of the first row of the set in the same host_work range
// of `engine` (it fits that range's terms: a release's scheduler, drafting loop and sampler are its
// own, and a term fitted to one release must not price another); for a row naming no version, ""
// (it fits the engine's own host terms, overhead.*) unless the set names a current release.
static std::vector<std::string> release_scopes(const CalibrationSet& set, const EngineSpec& engine) {
  std::vector<std::string> scopes;
  std::map<const HostWork*, std::string> first;
  for (const auto& r : set.rows) {
    const std::string& v = r.scenario.engine_version;
    scopes.push_back(v.empty() ? "" : first.emplace(&engine.host_work_for(v), v).first->second);
  }
  // A row naming no version runs the current release, whose range's own terms (where rows of a
  // named current release fit them) would shadow the engine's: it joins that scope then.
  if (const auto current = first.find(&engine.host_work); current != first.end())
    for (auto& scope : scopes)
      if (scope.empty()) scope = current->second;
  return scopes;
}

static std::string scoped(const std::string& name, const std::string& scope) {
  return scope.empty() ? name : name + "@" + scope;
}

std::vector<std::string> default_fit_parameters(const CalibrationSet& set, const EngineSpec& engine) {
  std::vector<std::string> p = {"memory_efficiency", "compute_efficiency", "kernel_floor_s"};
  if (!engine.cuda_graphs) p.push_back("kernel_launch_s");
  bool tp = false;
  for (const auto& r : set.rows) tp = tp || r.scenario.workload.tp > 1;
  if (tp) {
    p.push_back("comm_latency_s");
    p.push_back("interconnect_efficiency");
  }
  // Dynamic trees of several sizes separate a tree's per-node host time from its per-step time.
  std::set<int> dynamic_sizes;
  for (const auto& r : set.rows)
    if (r.scenario.plan.tree && r.scenario.plan.dynamic_depth > 0) dynamic_sizes.insert(r.scenario.plan.tree->size());
  if (dynamic_sizes.size() > 1) {
    p.push_back("tree_step_s");
    p.push_back("tree_node_s");
  }
  // The host terms, once per release scope, each from that scope's rows alone.
  const std::vector<std::string> scope_of = release_scopes(set, engine);
  std::vector<std::string> scopes;
  for (const auto& sc : scope_of)
    if (std::find(scopes.begin(), scopes.end(), sc) == scopes.end()) scopes.push_back(sc);
  std::set<const HostWork*> request_ranges;
  for (const auto& scope : scopes) {
    std::set<std::string> methods;
    std::set<int> batches, plain_batches, spec_batches;
    for (size_t i = 0; i < set.rows.size(); ++i) {
      if (scope_of[i] != scope) continue;
      const Scenario& r = set.rows[i].scenario;
      if (r.plan.method != Method::sequential) methods.insert(method_name(r.plan.method));
      // The batch-dependent host terms below are told apart by dense targets' rows alone: a
      // mixture-of-experts target's step also grows with the batch through the experts it covers
      // (simulator/expert_popularity.hpp), which a per-request or per-row host term would absorb.
      if (r.target.is_moe()) continue;
      batches.insert(r.workload.batch);
      (r.plan.method == Method::sequential ? plain_batches : spec_batches).insert(r.workload.batch);
    }
    p.push_back(scoped("step_overhead_s", scope));
    // Host time per verified row of each sequence (sampling, the acceptance test) grows with the
    // batch while the per-step terms do not: only (dense) rows at several batch sizes tell them apart.
    if (batches.size() > 1) p.push_back(scoped("sampling_s_per_row", scope));
    // Where it saturates is a second parameter of the same curve: three batch sizes at least.
    if (batches.size() > 2) p.push_back(scoped("sampling_saturation_rows", scope));
    // Host work per running request grows with the batch as the per-row term does, but a speculative
    // step verifies K + 1 rows per request where a plain step verifies one: plain and speculative
    // rows each at several batch sizes tell the two apart. It is always a term of a release range
    // (rows naming no version: the current release's), fitted once per range.
    if (plain_batches.size() > 1 && spec_batches.size() > 1 && request_ranges.insert(&engine.host_work_for(scope)).second)
      p.push_back(scoped("request_overhead_s", scope));
    for (const auto& m : methods) {
      p.push_back(scoped("draft_step_overhead_s." + m, scope));
      p.push_back(scoped("spec_step_overhead_s." + m, scope));
    }
  }
  return p;
}

// A parameter name and its release scope ("step_overhead_s@0.4.4": the range holding 0.4.4).
static std::pair<std::string, std::string> split_scope(const std::string& name) {
  const size_t at = name.find('@');
  if (at == std::string::npos) return {name, ""};
  return {name.substr(0, at), name.substr(at + 1)};
}

// Host terms a release range may give its own (simulator/engine_spec.hpp, HostWork).
static bool is_release_term(const std::string& base) {
  return base == "step_overhead_s" || base == "request_overhead_s" || base == "sampling_s_per_row" ||
         base == "sampling_saturation_rows" || base.rfind("draft_step_overhead_s.", 0) == 0 ||
         base.rfind("spec_step_overhead_s.", 0) == 0;
}

bool is_engine_parameter(const std::string& name) {
  const std::string base = split_scope(name).first;
  return is_release_term(base) || base == "kernel_launch_s" || base == "tree_step_s" || base == "tree_level_s" ||
         base == "tree_node_s";
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

// The release a scoped name reads and sets (validated), or "" for an unscoped one.
static std::string scope_version(const std::string& name) {
  const auto [base, version] = split_scope(name);
  if (name.find('@') == std::string::npos) return "";
  if (!is_release_term(base))
    throw Error("calibration parameter '" + name + "': '" + base + "' is not a term of a release (only step_overhead_s, "
                "request_overhead_s, sampling_s_per_row, sampling_saturation_rows, draft_step_overhead_s.<method> "
                "and spec_step_overhead_s.<method> take '@<engine version>')");
  if (version.empty())
    throw Error("calibration parameter '" + name + "': no engine version after '@' (e.g. " + base + "@0.4.4)");
  parse_engine_version(version, "calibration parameter '" + name + "'");
  return version;
}

double get_parameter(const Platform& p_in, const std::string& name) {
  Platform& p = const_cast<Platform&>(p_in);
  const HardwareSpec& h = p.hardware;
  const std::string version = scope_version(name);
  const std::string base = split_scope(name).first;
  const HostWork& range = p_in.engine.host_work_for(version);
  if (base == "compute_efficiency") return h.compute_efficiency;
  if (base == "memory_efficiency") return h.memory_efficiency;
  if (base == "interconnect_efficiency") return h.interconnect_efficiency;
  if (base == "kernel_floor_s") return h.kernel_floor_s;
  if (base == "comm_latency_s") return h.comm_latency_s;
  if (base == "overlap_exponent") return h.overlap_exponent;
  // Unscoped: the engine's own terms (request_s has none: the current release's range).
  if (base == "step_overhead_s") return version.empty() ? p.engine.step_overhead_s : p.engine.step_overhead(version);
  if (base == "request_overhead_s") return range.request_s;
  if (base == "sampling_s_per_row")
    return !version.empty() && range.sampling_s_per_row >= 0 ? range.sampling_s_per_row : p.engine.sampling_s_per_row;
  if (base == "sampling_saturation_rows")
    return !version.empty() && range.sampling_saturation_rows >= 0 ? range.sampling_saturation_rows
                                                                    : p.engine.sampling_saturation_rows;
  if (base == "tree_step_s") return p.engine.tree_cost.per_step_s;
  if (base == "tree_level_s") return p.engine.tree_cost.per_level_s;
  if (base == "tree_node_s") return p.engine.tree_cost.per_node_s;
  if (base == "kernel_launch_s") return p.engine.kernel_launch_s;
  std::string method;
  if (method_map(p.engine, base, &method)) {
    const bool draft = base.rfind("draft", 0) == 0;
    if (version.empty()) return method_term(draft ? p.engine.draft_step_overhead_s : p.engine.spec_step_overhead_s, method);
    return draft ? p_in.engine.draft_step_overhead(method, version) : p_in.engine.spec_step_overhead(method, version);
  }
  throw Error("unknown calibration parameter '" + name +
              "'; expected (hardware) compute_efficiency, memory_efficiency, interconnect_efficiency, kernel_floor_s, "
              "comm_latency_s, overlap_exponent or (engine) step_overhead_s, request_overhead_s, kernel_launch_s, "
              "sampling_s_per_row, "
              "sampling_saturation_rows, tree_step_s, tree_level_s, tree_node_s, "
              "draft_step_overhead_s.<method>, spec_step_overhead_s.<method> (a host term of one release: "
              "<name>@<engine version>)");
}

void set_parameter(Platform& p, const std::string& name, double value) {
  get_parameter(p, name);  // validates the name
  HardwareSpec& h = p.hardware;
  const std::string version = scope_version(name);
  const std::string base = split_scope(name).first;
  HostWork& range = p.engine.host_work_for(version);
  if (base == "compute_efficiency") h.compute_efficiency = value;
  else if (base == "memory_efficiency") h.memory_efficiency = value;
  else if (base == "interconnect_efficiency") h.interconnect_efficiency = value;
  else if (base == "kernel_floor_s") h.kernel_floor_s = value;
  else if (base == "comm_latency_s") h.comm_latency_s = value;
  else if (base == "overlap_exponent") h.overlap_exponent = std::clamp(value, 1.0, 64.0);
  else if (base == "step_overhead_s") (version.empty() ? p.engine.step_overhead_s : range.step_s) = value;
  else if (base == "request_overhead_s") range.request_s = value;
  else if (base == "sampling_s_per_row") (version.empty() ? p.engine.sampling_s_per_row : range.sampling_s_per_row) = value;
  else if (base == "sampling_saturation_rows")
    (version.empty() ? p.engine.sampling_saturation_rows : range.sampling_saturation_rows) = value;
  else if (base == "tree_step_s") p.engine.tree_cost.per_step_s = value;
  else if (base == "tree_level_s") p.engine.tree_cost.per_level_s = value;
  else if (base == "tree_node_s") p.engine.tree_cost.per_node_s = value;
  else if (base == "kernel_launch_s") p.engine.kernel_launch_s = value;
  else {
    std::string method;
    std::map<std::string, double>* engine_map = method_map(p.engine, base, &method);
    if (!version.empty()) engine_map = base.rfind("draft", 0) == 0 ? &range.draft_step_s : &range.spec_step_s;
    (*engine_map)[method] = value;
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
  // Overheads that start at zero get a small positive start so the log transform can move them.
  std::vector<double> x0;
  for (const auto& p : params) {
    double v = get_parameter(p0, p);
    // No saturation (0) starts from a point beyond the rows most sets hold, nearly linear there.
    if (split_scope(p).first == "sampling_saturation_rows" && v <= 0) v = kSaturationStartRows;
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
