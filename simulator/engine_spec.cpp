#include "simulator/engine_spec.hpp"

#include <cmath>
#include <utility>
#include <vector>

#include "reference/core/error.hpp"
#include "reference/methods/registry.hpp"
#include "simulator/spec_json.hpp"

namespace specdec::sim {

namespace {

// Every host term (per step, per forward, per row, per context token) is at most a second: a
// thousand times any engine's, and far inside what keeps predicted times finite.
constexpr double kMaxHostSeconds = 1.0;
// A saturation point beyond any batch × draft rows the simulator takes (batch and tree limits).
constexpr double kMaxSaturationRows = 1e7;

}  // namespace

// A method's own term; else, for the EAGLE family, its nearest sibling's; else "default"; else 0.
// The engines modelled run EAGLE-1, EAGLE-3 and P-EAGLE through one drafting loop (vLLM's EAGLE
// proposer drafts P-EAGLE as a parallel-drafting EAGLE-3 head), so a term measured for one is the
// best estimate for another: a method absent from calibration must not become free. The term is
// per drafter forward (or per iteration), so P-EAGLE, one forward per step, pays it once.
double method_term(const std::map<std::string, double>& m, const std::string& method) {
  auto it = m.find(method);
  if (it != m.end()) return it->second;
  for (const std::string& sibling : cost_siblings(method)) {
    it = m.find(sibling);
    if (it != m.end()) return it->second;
  }
  it = m.find("default");
  return it == m.end() ? 0.0 : it->second;
}

namespace {

template <class T>
const T* lookup_entry(const std::map<std::string, T>& m, const std::string& method) {
  auto it = m.find(method);
  if (it != m.end()) return &it->second;
  for (const std::string& sibling : cost_siblings(method)) {
    it = m.find(sibling);
    if (it != m.end()) return &it->second;
  }
  it = m.find("default");
  return it == m.end() ? nullptr : &it->second;
}

// An optional host time in seconds (0 when absent), within [0, kMaxHostSeconds].
double host_seconds(const nlohmann::json& v, const char* field, const std::string& where) {
  const double s = get_number_or(v, field, 0.0, where);
  require_in_range(s, field, where, 0.0, kMaxHostSeconds, true, "s");
  return s;
}

LookupCost parse_lookup_cost(const nlohmann::json& v, const std::string& where) {
  LookupCost c;
  if (v.is_number()) {
    c.per_sequence_s = v.get<double>();
    require_in_range(c.per_sequence_s, "per_sequence_s", where, 0.0, kMaxHostSeconds, true, "s");
    return c;
  }
  if (!v.is_object())
    throw Error(where + ": must be seconds per sequence or an object {per_step_s, per_sequence_s, per_context_token_s, "
                "per_emitted_token_s, threads}");
  check_known_fields(v, {"per_step_s", "per_sequence_s", "per_context_token_s", "per_emitted_token_s", "threads"}, where);
  c.per_step_s = host_seconds(v, "per_step_s", where);
  c.per_sequence_s = host_seconds(v, "per_sequence_s", where);
  c.per_context_token_s = host_seconds(v, "per_context_token_s", where);
  c.per_emitted_token_s = host_seconds(v, "per_emitted_token_s", where);
  c.threads = get_int_or(v, "threads", 1, where);
  if (c.threads < 1 || c.threads > 4096)
    throw Error(where + ": field 'threads' must be in [1, 4096] host threads, got " + std::to_string(c.threads));
  return c;
}

std::map<std::string, LookupCost> parse_lookup(const nlohmann::json& o, const std::string& source) {
  std::map<std::string, LookupCost> out;
  if (!has_field(o, "lookup")) return out;
  const auto& m = o.at("lookup");
  const std::string where = source + ": field 'lookup'";
  if (!m.is_object())
    throw Error(where + " must be an object {method: {per_step_s, per_sequence_s, per_context_token_s, "
                "per_emitted_token_s, threads}}");
  for (const auto& [method, v] : m.items()) {
    if (method == "sources" || method == "comment" || method.rfind('_', 0) == 0) continue;
    const std::string key = method == "default" ? method : method_name(parse_method(method, where));
    if (key != "default" && !draft_free(parse_method(key, where)))
      throw Error(where + ": method " + key + " drafts with a model; a lookup term is for draft-free methods (" +
                  [] {
                    std::string names;
                    for (int i = 0; i < kPricedMethods; ++i)
                      if (draft_free(Method(i))) names += (names.empty() ? "" : ", ") + method_name(Method(i));
                    return names;
                  }() + ")");
    out[key] = parse_lookup_cost(v, source + " (overhead.lookup." + method + ")");
  }
  return out;
}

std::map<std::string, double> parse_method_map(const nlohmann::json& j, const std::string& key,
                                               const std::string& source) {
  std::map<std::string, double> out;
  if (!has_field(j, key)) return out;
  const auto& m = j.at(key);
  const std::string where = source + ": field '" + key + "'";
  if (m.is_number()) {
    out["default"] = m.get<double>();
  } else if (m.is_object()) {
    for (const auto& [method, v] : m.items()) {
      if (!v.is_number())
        throw Error(source + ": field '" + key + "." + method + "' must be a number of seconds, got " + v.dump());
      // Keys are method names (older spellings such as eagle1 are mapped onto the current ones).
      out[method == "default" ? method : method_name(parse_method(method, where))] = v.get<double>();
    }
  } else {
    throw Error(where + " must be a number of seconds or an object {method: seconds}");
  }
  for (const auto& [method, v] : out) require_in_range(v, key + "." + method, source, 0.0, kMaxHostSeconds, true, "s");
  return out;
}

// One range of host_work: {sequential, speculative, request_s, step_s?, source} (and from/until in
// `versions`).
HostWork parse_host_work_range(const nlohmann::json& v, const std::string& where) {
  HostWork h;
  for (const char* f : {"sequential", "speculative"})
    if (!has_field(v, f))
      throw Error(where + ": field '" + f + "' is missing (true: the engine hides its per-step host work behind the "
                  "device in " + (std::string(f) == "sequential" ? "plain" : "speculative") + " decoding)");
  h.sequential = get_bool_or(v, "sequential", false, where);
  h.speculative = get_bool_or(v, "speculative", false, where);
  if (!has_field(v, "request_s"))
    throw Error(where + ": field 'request_s' is missing (seconds of host work per running request and step in these "
                "releases, with its source)");
  h.request_s = get_number_or(v, "request_s", 0.0, where);
  require_in_range(h.request_s, "request_s", where, 0.0, kMaxHostSeconds, true, "s");
  if (has_field(v, "step_s")) {
    h.step_s = get_number_or(v, "step_s", 0.0, where);
    require_in_range(h.step_s, "step_s", where, 0.0, kMaxHostSeconds, true, "s");
  }
  h.draft_step_s = parse_method_map(v, "draft_step_s", where);
  h.spec_step_s = parse_method_map(v, "spec_step_s", where);
  if (has_field(v, "sampling_s_per_row")) {
    h.sampling_s_per_row = get_number_or(v, "sampling_s_per_row", 0.0, where);
    require_in_range(h.sampling_s_per_row, "sampling_s_per_row", where, 0.0, kMaxHostSeconds, true, "s");
  }
  if (has_field(v, "sampling_saturation_rows")) {
    h.sampling_saturation_rows = get_number_or(v, "sampling_saturation_rows", 0.0, where);
    require_in_range(h.sampling_saturation_rows, "sampling_saturation_rows", where, 1.0, kMaxSaturationRows, true,
                     "rows (0: the per-row time never saturates)");
  }
  if (!has_field(v, "source") || !v.at("source").is_string() || v.at("source").get<std::string>().empty())
    throw Error(where + ": field 'source' is missing (where the behaviour and the figures come from: a release note, "
                "PR, code or measurement)");
  h.source = v.at("source").get<std::string>();
  return h;
}

// The fields of one host_work range (a range in `versions` adds from and until).
std::vector<std::string> range_fields() {
  return {"sequential", "speculative", "request_s", "step_s", "draft_step_s", "spec_step_s", "sampling_s_per_row",
          "sampling_saturation_rows", "source"};
}

// host_work: {"current": {sequential, speculative, request_s, step_s?, source},
//             "versions": [{from?, until?, sequential, speculative, request_s, step_s?, source}, ...]}
void parse_host_work(const nlohmann::json& j, const std::string& source, EngineSpec& e) {
  const std::string where = source + " (host_work)";
  if (!j.is_object()) throw Error(where + ": must be an object {current, versions}");
  check_known_fields(j, {"current", "versions"}, where);
  if (!has_field(j, "current"))
    throw Error(where + ": field 'current' is missing (the current release's host work, used when no version is named)");
  const auto& c = j.at("current");
  if (!c.is_object())
    throw Error(where + ": field 'current' must be an object {sequential, speculative, request_s, step_s, source}");
  check_known_fields(c, range_fields(), where + " current");
  e.host_work = parse_host_work_range(c, where + " current");
  if (!has_field(j, "versions")) return;
  const auto& v = j.at("versions");
  if (!v.is_array())
    throw Error(where + ": field 'versions' must be a list of {from, until, sequential, speculative, request_s, source}");
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string w = where + " versions[" + std::to_string(i) + "]";
    const auto& r = v[i];
    if (!r.is_object()) throw Error(w + ": must be an object {from, until, sequential, speculative, request_s, source}");
    std::vector<std::string> fields = range_fields();
    fields.insert(fields.end(), {"from", "until"});
    check_known_fields(r, fields, w);
    HostWorkEra era;
    era.from = get_string_or(r, "from", "", w);
    era.until = get_string_or(r, "until", "", w);
    if (era.from.empty() && era.until.empty())
      throw Error(w + ": give 'from' or 'until' (a range of versions; the current release's host work is 'current')");
    if (!era.from.empty()) parse_engine_version(era.from, w + " 'from'");
    if (!era.until.empty()) parse_engine_version(era.until, w + " 'until'");
    if (!era.from.empty() && !era.until.empty() && compare_engine_versions(era.from, era.until) >= 0)
      throw Error(w + ": 'from' " + era.from + " is not older than 'until' " + era.until + " (the range is [from, until))");
    era.work = parse_host_work_range(r, w);
    for (size_t k = 0; k < e.host_work_eras.size(); ++k) {
      const HostWorkEra& o = e.host_work_eras[k];
      // [a, b) and [c, d) intersect unless b <= c or d <= a (an empty bound is open).
      const bool before = !era.until.empty() && !o.from.empty() && compare_engine_versions(era.until, o.from) <= 0;
      const bool after = !o.until.empty() && !era.from.empty() && compare_engine_versions(o.until, era.from) <= 0;
      if (!before && !after)
        throw Error(w + ": its versions overlap those of versions[" + std::to_string(k) + "] (each version in one range)");
    }
    e.host_work_eras.push_back(era);
  }
}

}  // namespace

std::vector<int> parse_engine_version(const std::string& version, const std::string& where) {
  std::string v = version;
  if (!v.empty() && (v[0] == 'v' || v[0] == 'V')) v = v.substr(1);
  std::vector<int> out;
  size_t i = 0;
  while (i <= v.size()) {
    size_t j = i;
    while (j < v.size() && v[j] >= '0' && v[j] <= '9') ++j;
    if (j == i || j - i > 6 || (j < v.size() && v[j] != '.'))
      throw Error(where + ": engine version '" + version + "' is not a dotted version number such as 0.4.4 or v0.14.0");
    out.push_back(std::stoi(v.substr(i, j - i)));
    i = j + 1;
    if (j == v.size()) break;
  }
  if (out.size() > 4) throw Error(where + ": engine version '" + version + "' has more than 4 components");
  return out;
}

int compare_engine_versions(const std::string& a, const std::string& b) {
  const std::vector<int> x = parse_engine_version(a, "engine version"), y = parse_engine_version(b, "engine version");
  for (size_t i = 0; i < std::max(x.size(), y.size()); ++i) {
    const int p = i < x.size() ? x[i] : 0, q = i < y.size() ? y[i] : 0;
    if (p != q) return p < q ? -1 : 1;
  }
  return 0;
}

TreeCost parse_tree_cost(const nlohmann::json& v, const std::string& where) {
  if (!v.is_object()) throw Error(where + ": must be an object {per_step_s, per_level_s, per_node_s} (seconds)");
  check_known_fields(v, {"per_step_s", "per_level_s", "per_node_s"}, where);
  TreeCost t;
  t.per_step_s = host_seconds(v, "per_step_s", where);
  t.per_level_s = host_seconds(v, "per_level_s", where);
  t.per_node_s = host_seconds(v, "per_node_s", where);
  return t;
}

double TreeCost::seconds(int levels, int nodes, bool dynamic) const {
  double t = per_level_s * std::max(levels, 0);
  if (dynamic) t += per_step_s + per_node_s * std::max(nodes, 0);
  return t;
}

double LookupCost::seconds(int batch, double context, double emitted) const {
  const double rounds = std::ceil(double(std::max(batch, 0)) / double(std::max(threads, 1)));
  return per_step_s + rounds * (per_sequence_s + per_context_token_s * context + per_emitted_token_s * emitted);
}

LookupCost EngineSpec::lookup_cost(const std::string& method) const {
  const LookupCost* c = lookup_entry(lookup, method);
  return c ? *c : LookupCost{};
}

double EngineSpec::sampling_seconds(double rows, const std::string& version) const {
  if (rows <= 0) return 0;
  const HostWork& h = host_work_for(version);
  const double per_row = h.sampling_s_per_row >= 0 ? h.sampling_s_per_row : sampling_s_per_row;
  const double saturation = h.sampling_saturation_rows >= 0 ? h.sampling_saturation_rows : sampling_saturation_rows;
  const double linear = per_row * rows;
  return saturation > 0 ? linear / (1.0 + rows / saturation) : linear;
}

const HostWork& EngineSpec::host_work_for(const std::string& version) const {
  if (version.empty()) return host_work;
  for (const HostWorkEra& era : host_work_eras)
    if ((era.from.empty() || compare_engine_versions(version, era.from) >= 0) &&
        (era.until.empty() || compare_engine_versions(version, era.until) < 0))
      return era.work;
  return host_work;
}

HostWork& EngineSpec::host_work_for(const std::string& version) {
  return const_cast<HostWork&>(std::as_const(*this).host_work_for(version));
}

double EngineSpec::host_seconds(const std::string& version, int batch) const {
  return step_overhead(version) + host_work_for(version).request_s * std::max(batch, 0);
}

double EngineSpec::step_overhead(const std::string& version) const {
  const HostWork& h = host_work_for(version);
  return h.step_s >= 0 ? h.step_s : step_overhead_s;
}

double EngineSpec::draft_step_overhead(const std::string& method, const std::string& version) const {
  const double* own = lookup_entry(host_work_for(version).draft_step_s, method);
  return own ? *own : method_term(draft_step_overhead_s, method);
}
double EngineSpec::spec_step_overhead(const std::string& method, const std::string& version) const {
  const double* own = lookup_entry(host_work_for(version).spec_step_s, method);
  return own ? *own : method_term(spec_step_overhead_s, method);
}

EngineSpec parse_engine_spec(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw Error(source + ": an engine spec must be a JSON object");
  check_known_fields(j, {"name", "overhead", "kernels", "methods", "trees", "tree_verification", "pads_attention_heads",
                         "interleaves_prefill", "host_work"},
                     source);
  EngineSpec e;
  e.name = get_string(j, "name", source);
  e.description = get_string_or(j, "description", e.name, source);
  if (has_field(j, "overhead")) {
    const auto& o = j.at("overhead");
    const std::string s = source + " (overhead)";
    if (!o.is_object()) throw Error(s + ": must be an object {step_s, draft_step_s, spec_step_s, sampling_s_per_row, lookup}");
    check_known_fields(o,
                       {"step_s", "draft_step_s", "spec_step_s", "sampling_s_per_row", "sampling_saturation_rows",
                        "lookup", "tree"},
                       s);
    e.step_overhead_s = get_number_or(o, "step_s", 0.0, s);
    require_in_range(e.step_overhead_s, "step_s", s, 0.0, kMaxHostSeconds, true, "s");
    e.sampling_s_per_row = get_number_or(o, "sampling_s_per_row", 0.0, s);
    require_in_range(e.sampling_s_per_row, "sampling_s_per_row", s, 0.0, kMaxHostSeconds, true, "s");
    e.sampling_saturation_rows = get_number_or(o, "sampling_saturation_rows", 0.0, s);
    require_in_range(e.sampling_saturation_rows, "sampling_saturation_rows", s, 1.0, kMaxSaturationRows, true,
                     "rows (0: the per-row time never saturates)");
    e.draft_step_overhead_s = parse_method_map(o, "draft_step_s", s);
    e.spec_step_overhead_s = parse_method_map(o, "spec_step_s", s);
    e.lookup = parse_lookup(o, s);
    if (has_field(o, "tree")) e.tree_cost = parse_tree_cost(o.at("tree"), source + " (overhead.tree)");
  }
  if (has_field(j, "kernels")) {
    const auto& k = j.at("kernels");
    const std::string s = source + " (kernels)";
    if (!k.is_object()) throw Error(s + ": must be an object {cuda_graphs, launch_s, per_operator}");
    check_known_fields(k, {"cuda_graphs", "launch_s", "per_operator", "fusion"}, s);
    if (has_field(k, "fusion")) e.fusion = parse_kernel_fusion(k.at("fusion"), source);
    e.cuda_graphs = get_bool_or(k, "cuda_graphs", true, s);
    e.kernel_launch_s = get_number_or(k, "launch_s", 0.0, s);
    require_in_range(e.kernel_launch_s, "launch_s", s, 0.0, kMaxHostSeconds, true, "s");
    e.kernels_per_operator = get_number_or(k, "per_operator", 1.0, s);
    if (!(e.kernels_per_operator >= 1.0 && e.kernels_per_operator <= 1000.0))
      throw Error(s + ": field 'per_operator' must be in [1, 1000] kernels, got " + std::to_string(e.kernels_per_operator));
    if (!e.cuda_graphs && e.kernel_launch_s == 0)
      throw Error(s + ": an engine without CUDA graphs needs 'launch_s' (host seconds per kernel launch)");
  }
  if (has_field(j, "methods")) {
    const auto& m = j.at("methods");
    if (!m.is_array() || m.empty())
      throw Error(source + ": field 'methods' must be a non-empty list of method names, e.g. [\"draft\", \"eagle3\"]");
    for (const auto& v : m) {
      if (!v.is_string()) throw Error(source + ": field 'methods' must hold method names, got " + v.dump());
      e.methods.insert(parse_method(v.get<std::string>(), source + ": field 'methods'"));
    }
  }
  e.trees = get_bool_or(j, "trees", true, source);
  const std::string tv = get_string_or(j, "tree_verification", "tree_attention", source);
  if (tv != "tree_attention" && tv != "flattened")
    throw Error(source + ": field 'tree_verification' must be \"tree_attention\" (one forward with a tree mask) or "
                "\"flattened\" (one sequence per root-to-leaf path), got \"" + tv + "\"");
  if (tv == "flattened" && !e.trees)
    throw Error(source + ": 'tree_verification' is \"flattened\" but 'trees' is false: an engine that verifies no trees "
                "has no way to verify them");
  e.flatten_trees = tv == "flattened";
  e.pads_attention_heads = get_bool_or(j, "pads_attention_heads", false, source);
  e.interleaves_prefill = get_bool_or(j, "interleaves_prefill", true, source);
  if (has_field(j, "host_work")) parse_host_work(j.at("host_work"), source, e);
  return e;
}

EngineSpec load_engine_spec(const std::filesystem::path& path) {
  return parse_engine_spec(read_json_file(path, "engine spec"), path.filename().string());
}

nlohmann::json engine_spec_to_json(const EngineSpec& e, const nlohmann::json& sources) {
  nlohmann::json j;
  j["name"] = e.name;
  j["description"] = e.description;
  j["overhead"] = {{"step_s", e.step_overhead_s},
                   {"draft_step_s", e.draft_step_overhead_s},
                   {"spec_step_s", e.spec_step_overhead_s},
                   {"sampling_s_per_row", e.sampling_s_per_row},
                   {"sampling_saturation_rows", e.sampling_saturation_rows}};
  if (!e.lookup.empty()) {
    nlohmann::json l = nlohmann::json::object();
    for (const auto& [method, c] : e.lookup)
      l[method] = {{"per_step_s", c.per_step_s},
                   {"per_sequence_s", c.per_sequence_s},
                   {"per_context_token_s", c.per_context_token_s},
                   {"per_emitted_token_s", c.per_emitted_token_s},
                   {"threads", c.threads}};
    j["overhead"]["lookup"] = l;
  }
  j["overhead"]["tree"] = {{"per_step_s", e.tree_cost.per_step_s},
                           {"per_level_s", e.tree_cost.per_level_s},
                           {"per_node_s", e.tree_cost.per_node_s}};
  j["kernels"] = {{"cuda_graphs", e.cuda_graphs}, {"launch_s", e.kernel_launch_s}, {"per_operator", e.kernels_per_operator}};
  if (!(e.fusion == KernelFusion{})) j["kernels"]["fusion"] = kernel_fusion_to_json(e.fusion);
  if (!e.methods.empty()) {
    j["methods"] = nlohmann::json::array();
    for (Method m : e.methods) j["methods"].push_back(method_name(m));
  }
  j["trees"] = e.trees;
  if (e.trees) j["tree_verification"] = e.flatten_trees ? "flattened" : "tree_attention";
  if (e.pads_attention_heads) j["pads_attention_heads"] = true;
  j["interleaves_prefill"] = e.interleaves_prefill;
  if (!e.host_work.source.empty()) {
    auto range = [](const HostWork& w) {
      nlohmann::json r = {{"sequential", w.sequential}, {"speculative", w.speculative}, {"request_s", w.request_s},
                          {"source", w.source}};
      if (w.step_s >= 0) r["step_s"] = w.step_s;
      if (!w.draft_step_s.empty()) r["draft_step_s"] = w.draft_step_s;
      if (!w.spec_step_s.empty()) r["spec_step_s"] = w.spec_step_s;
      if (w.sampling_s_per_row >= 0) r["sampling_s_per_row"] = w.sampling_s_per_row;
      if (w.sampling_saturation_rows >= 0) r["sampling_saturation_rows"] = w.sampling_saturation_rows;
      return r;
    };
    nlohmann::json h;
    h["current"] = range(e.host_work);
    h["versions"] = nlohmann::json::array();
    for (const HostWorkEra& era : e.host_work_eras) {
      nlohmann::json r = range(era.work);
      if (!era.from.empty()) r["from"] = era.from;
      if (!era.until.empty()) r["until"] = era.until;
      h["versions"].push_back(r);
    }
    j["host_work"] = h;
  }
  if (!sources.is_null()) j["sources"] = sources;
  return j;
}

std::string default_engine_for(const std::string& hardware_kind) {
  if (hardware_kind == "neuron") return "transformers-neuronx";
  if (hardware_kind == "cpu") return "specdec-cpu";
  return "vllm";
}

}  // namespace specdec::sim
