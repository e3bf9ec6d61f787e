#include "experiments/sweep/sweep_spec.hpp"

#include <filesystem>
#include <functional>
#include <set>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"
#include "reference/decoding/generation.hpp"
#include "reference/drafting/draft_limits.hpp"
#include "reference/drafting/tree_choices.hpp"
#include "reference/io/json_input.hpp"
#include "reference/methods/registry.hpp"
#include "reference/sampling/sampling_params.hpp"
#include "runtime/batch_job.hpp"

namespace specdec::sweep {

namespace {

using json = nlohmann::json;

std::string fmt(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// The grid's axes, outermost first: the order cells are expanded in.
const std::vector<std::string>& axes() {
  static const std::vector<std::string> a = {"method", "drafter", "k", "tree", "depth", "tree_top_k", "total_tokens",
                                             "force_depth", "policy", "sampling", "temperature", "top_k", "top_p", "seed", "backend",
                                             "concurrency"};
  return a;
}

// "[3]"; built by appending (GCC 12 warns falsely about "[" + std::to_string(i) + "]").
std::string index_suffix(size_t i) {
  std::string s = "[";
  s += std::to_string(i);
  s += ']';
  return s;
}

std::string known(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

int as_int(const json& v, const std::string& where) {
  if (!v.is_number_integer()) throw Error(where + ": expected an integer, got " + v.dump());
  const int64_t x = v.get<int64_t>();
  if (x < -1000000000 || x > 1000000000) throw Error(where + ": " + v.dump() + " is out of range");
  return static_cast<int>(x);
}

double as_number(const json& v, const std::string& where) {
  if (!v.is_number()) throw Error(where + ": expected a number, got " + v.dump());
  return v.get<double>();
}

std::string as_string(const json& v, const std::string& where) {
  if (!v.is_string() || v.get<std::string>().empty()) throw Error(where + ": expected a non-empty string, got " + v.dump());
  return v.get<std::string>();
}

// Sets one axis of `c` from `v`.
void set_axis(Cell& c, const std::string& axis, const json& v, const std::string& where) {
  if (axis == "method") {
    // "NAME[,key=value...]": the method's own parameters ride with its name (ngram,n_min=2).
    const MethodSpec m = parse_method_text(as_string(v, where), where);
    c.method.name = m.name;
    c.method.params = m.params;
  }
  else if (axis == "drafter") c.drafter = as_string(v, where);
  else if (axis == "k") c.method.k = as_int(v, where);
  else if (axis == "tree") c.method.tree = v.is_array() ? v.dump() : as_string(v, where);  // inline paths kept as JSON text
  else if (axis == "depth") c.method.depth = as_int(v, where);
  else if (axis == "tree_top_k") c.method.tree_top_k = as_int(v, where);
  else if (axis == "total_tokens") c.method.total_tokens = as_int(v, where);
  else if (axis == "force_depth") {
    if (!v.is_boolean()) throw Error(where + ": expected true or false, got " + v.dump());
    c.method.force_depth = v.get<bool>();
  } else if (axis == "policy") {
    // "NAME[,key=value...]" or {"policy": NAME, ...parameters}; errors name the entry and field.
    if (v.is_string()) c.policy = parse_policy_spec(v.get<std::string>(), where);
    else if (v.is_object()) c.policy = policy_from_json(v, where);
    else throw Error(where + ": expected a policy: \"NAME[,key=value...]\" or {\"policy\": NAME, ...parameters}, got " + v.dump());
  } else if (axis == "sampling") c.sampling = as_string(v, where);
  else if (axis == "temperature") c.temperature = as_number(v, where);
  else if (axis == "top_k") c.top_k = as_int(v, where);
  else if (axis == "top_p") c.top_p = as_number(v, where);
  else if (axis == "seed") {
    if (v.is_string() && v.get<std::string>() == "prompt") c.seed = -1;
    else if (v.is_number_integer() && v.get<int64_t>() >= 0) c.seed = v.get<int64_t>();
    else throw Error(where + ": expected a non-negative integer or \"prompt\" (the prompt's index in its category), got " + v.dump());
  } else if (axis == "backend") c.backend = as_string(v, where);
  else if (axis == "concurrency") c.concurrency = as_int(v, where);
}

bool needs_drafter(const Cell& c) { return method_entry(c.method.name).drafter.loads_checkpoint(); }

// Clears what the configuration does not use, so equal runs have equal keys.
Cell normalized(Cell c) {
  const Cell d;
  c.method = c.method.normalized();
  if (!needs_drafter(c)) c.drafter.clear();
  if (!method_entry(c.method.name).make_proposer) c.policy = d.policy;  // nothing drafted: no depth to choose
  if (c.sampling == "greedy") c.temperature = d.temperature, c.top_k = d.top_k, c.top_p = d.top_p, c.seed = d.seed;
  return c;
}

// The draft limits (reference/drafting/draft_limits.hpp) of the shape fields, checked here so that a
// grid's K list fails when the spec is read rather than when its cell's run starts. A static tree
// is read and laid out once per distinct spec (`trees`: those already checked). Draft-free methods
// bound K by the nodes of a step (suffix decoding's K is a token budget); their proposers check
// the exact limit, which the runner does for every cell before the first run.
void check_draft_shape(const MethodSpec& m, std::set<std::string>& trees) {
  const MethodEntry& e = method_entry(m.name);
  if (!e.make_proposer) return;
  if (m.tree == "chain") {
    check_draft_limit("k", "K", m.k, e.drafter.loads_checkpoint() ? kMaxDraftDepth : kMaxDraftNodes);
  } else if (m.tree == "dynamic") {
    check_draft_limit("depth", "the expansion depth", m.depth, kMaxDraftDepth);
    check_draft_limit("tree_top_k", "top-k", m.tree_top_k, kMaxDraftTopK);
    check_draft_limit("total_tokens", "total_tokens - 1 (draft nodes per step)", m.total_tokens - 1LL, kMaxDraftNodes);
  } else if (trees.insert(m.tree).second) {
    make_tree_shape(tree_choices_from_spec(m.tree), "tree");  // the file is read, its limits checked
  }
}

void check_cell(const Cell& c, const std::string& where, std::set<std::string>& trees) {
  try {
    check_method_spec(c.method);
    check_draft_shape(c.method, trees);
    SamplingParams p;
    p.mode = parse_sampling_mode(c.sampling);
    p.temperature = c.temperature;
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    p.validate();
    check_concurrency(c.concurrency, "concurrency");
  } catch (const std::exception& e) {
    throw Error(where + " (" + c.label() + "): " + e.what());
  }
  if (needs_drafter(c) && c.drafter.empty()) throw Error(where + ": method " + c.method.name + " needs a drafter");
}

// The drafter of `method` when the grid names none: the spec's "drafters", else the bundled
// models' layout beside the target (draft, eagle1, eagle3, peagle).
std::string default_drafter(const json& drafters, const std::string& model, const std::string& method) {
  if (drafters.contains(method)) return drafters[method].get<std::string>();
  const std::string& dir = method_entry(method).drafter.bundled_dir;
  return (std::filesystem::path(model).lexically_normal().parent_path() / dir).string();
}

std::vector<Prompt> parse_prompt_source(const json& p, const std::string& where) {
  if (p.is_string()) {
    const std::string s = p.get<std::string>();
    return is_bundled_prompt_set(s) ? load_bundled_prompts(s, 0) : load_prompt_file(s, 0);
  }
  if (!p.is_object()) throw Error(where + ": expected \"heldout\", \"context\", a file name or {\"set\"|\"file\": ..., \"per_category\": N}");
  for (const auto& [key, _] : p.items()) {
    if (key != "set" && key != "file" && key != "per_category") throw Error(where + ": unknown field '" + key + "'; known: set, file, per_category");
  }
  const int per = p.contains("per_category") ? as_int(p["per_category"], where + ".per_category") : 0;
  if (per < 0) throw Error(where + ".per_category must be >= 0 (0 = all)");
  if (p.contains("set") == p.contains("file")) throw Error(where + ": give one of \"set\" (\"heldout\", \"context\") or \"file\"");
  if (p.contains("set")) {
    if (!p["set"].is_string() || !is_bundled_prompt_set(p["set"].get<std::string>())) {
      throw Error(where + ".set: the bundled sets are \"heldout\" and \"context\", got " + p["set"].dump());
    }
    return load_bundled_prompts(p["set"].get<std::string>(), per);
  }
  return load_prompt_file(as_string(p["file"], where + ".file"), per);
}

}  // namespace

json Cell::to_json() const {
  json j = method.to_json();
  if (!is_fixed_policy(policy)) j["policy"] = policy.to_json();  // absent when fixed: keys of older sweeps stay valid
  j["backend"] = backend;
  j["sampling"] = sampling;
  if (method_entry(method.name).drafter.loads_checkpoint()) j["drafter"] = drafter;
  if (sampling != "greedy") {
    j["temperature"] = temperature;
    j["top_k"] = top_k;
    j["top_p"] = top_p;
    j["seed"] = seed < 0 ? json("prompt") : json(seed);
  }
  if (concurrency > 1) j["concurrency"] = concurrency;  // absent at 1: the keys of unbatched cells stay as they were
  return j;
}

std::string Cell::label() const {
  std::string s = method.label();
  if (!is_fixed_policy(policy)) s += " policy=" + policy.label();
  s += " " + sampling;
  if (sampling != "greedy") {
    s += " T=" + fmt(temperature);
    if (top_k) s += " top_k=" + std::to_string(top_k);
    if (top_p < 1) s += " top_p=" + fmt(top_p);
    s += " seed=" + (seed < 0 ? std::string("prompt") : std::to_string(seed));
  }
  if (backend != "reference") s += " " + backend;
  if (concurrency > 1) s += " B=" + std::to_string(concurrency);
  return s;
}

SweepSpec parse_sweep_spec(const json& j, const std::string& source, const std::string& prompts_override) {
  if (!j.is_object()) throw Error(source + ": a sweep spec is a JSON object");
  static const std::vector<std::string> fields = {"description", "model", "prompts", "max_new_tokens", "ignore_eos",
                                                  "repeats", "threads", "drafters", "predict", "grid"};
  for (const auto& [key, _] : j.items()) {
    if (std::find(fields.begin(), fields.end(), key) == fields.end()) {
      throw Error(source + ": unknown field '" + key + "'; known fields: " + known(fields));
    }
  }
  SweepSpec s;
  s.source = source;
  s.json = j;
  if (!prompts_override.empty()) s.json["prompts"] = prompts_override;
  if (!j.contains("model")) throw Error(source + ": no \"model\" (the target checkpoint directory)");
  s.model = as_string(j["model"], source + ": model");
  if (j.contains("max_new_tokens")) s.max_new_tokens = as_int(j["max_new_tokens"], source + ": max_new_tokens");
  if (s.max_new_tokens < 1) throw Error(source + ": max_new_tokens must be >= 1");
  check_input_limit(source, "max_new_tokens", s.max_new_tokens, static_cast<unsigned long long>(kMaxPositions));
  if (j.contains("ignore_eos")) {
    if (!j["ignore_eos"].is_boolean()) throw Error(source + ": ignore_eos must be true or false");
    s.ignore_eos = j["ignore_eos"].get<bool>();
  }
  if (j.contains("repeats")) s.repeats = as_int(j["repeats"], source + ": repeats");
  if (s.repeats < 1) throw Error(source + ": repeats must be >= 1");
  if (j.contains("threads")) s.threads = as_int(j["threads"], source + ": threads");
  if (s.threads < 0) throw Error(source + ": threads must be >= 0 (0 = the cores other processes are not busy on)");
  check_input_limit(source, "threads", s.threads, kMaxThreads);  // libgomp crashes on tens of thousands

  const json drafters = j.value("drafters", json::object());
  if (!drafters.is_object()) throw Error(source + ": drafters must be an object of method -> drafter directory");
  json canonical_drafters = json::object();
  for (const auto& [m, d] : drafters.items()) {
    canonical_drafters[method_entry(m, source + ": drafters").name] = as_string(d, source + ": drafters." + m);
  }

  // Prompts: one source or a list of them; ids must be unique within a set.
  const json prompts = s.json.value("prompts", json("heldout"));
  const json list = prompts.is_array() ? prompts : json::array({prompts});
  if (list.empty()) throw Error(source + ": prompts is an empty list");
  std::set<std::pair<std::string, std::string>> ids;
  for (size_t i = 0; i < list.size(); ++i) {
    for (Prompt& p : parse_prompt_source(list[i], source + ": prompts" + (prompts.is_array() ? index_suffix(i) : std::string()))) {
      if (!ids.insert({p.set, p.id}).second) throw Error(source + ": prompt " + p.set + "/" + p.id + " is listed twice");
      s.prompts.push_back(std::move(p));
    }
  }

  if (!j.contains("grid")) throw Error(source + ": no \"grid\" (an object of axis -> values, or a list of them)");
  const json blocks = j["grid"].is_array() ? j["grid"] : json::array({j["grid"]});
  // Each block's axes (a Cartesian product over those present, outermost first), and the cells they
  // make, counted before any is built: a few kilobytes of spec can name 10^9 cells.
  std::vector<std::vector<std::pair<std::string, json>>> block_axes;
  std::vector<std::string> block_where;
  uint64_t total_cells = 0;
  std::string block_counts;
  for (size_t b = 0; b < blocks.size(); ++b) {
    const std::string where = source + ": grid" + (j["grid"].is_array() ? index_suffix(b) : std::string());
    const json& block = blocks[b];
    if (!block.is_object()) throw Error(where + ": expected an object of axis -> value or list of values");
    for (const auto& [axis, _] : block.items()) {
      if (std::find(axes().begin(), axes().end(), axis) == axes().end()) {
        throw Error(where + ": unknown axis '" + axis + "'; known axes: " + known(axes()));
      }
    }
    std::vector<std::pair<std::string, json>> present;
    uint64_t cells = 1;
    bool overflow = false;
    std::string sizes;
    for (const auto& axis : axes()) {
      if (!block.contains(axis)) continue;
      const json& v = block[axis];
      // A tree given inline as paths ([[0],[1],[0,0]]) is one value, not a list of them.
      const bool one_tree = axis == "tree" && v.is_array() && !v.empty() && v[0].is_array() && !v[0].empty() && v[0][0].is_number();
      const json values = v.is_array() && !one_tree ? v : json::array({v});
      if (values.empty()) throw Error(where + "." + axis + ": empty list of values");
      overflow = overflow || __builtin_mul_overflow(cells, static_cast<uint64_t>(values.size()), &cells);
      sizes += (sizes.empty() ? "" : " x ") + std::to_string(values.size()) + " " + axis;
      present.emplace_back(axis, values);
    }
    if (overflow || cells > kMaxSweepCells) {
      throw Error(where + ": " + sizes + " make " + (overflow ? std::string("more than 2^64") : std::to_string(cells)) +
                  " cells, more than specdec supports (" + std::to_string(kMaxSweepCells) +
                  "); split the grid into several sweeps (see docs/reliability.md)");
    }
    total_cells += cells;  // at most blocks x kMaxSweepCells: no overflow
    block_counts += (block_counts.empty() ? "" : " + ") + std::to_string(cells);
    block_axes.push_back(std::move(present));
    block_where.push_back(where);
  }
  if (total_cells > kMaxSweepCells) {
    throw Error(source + ": grid: its blocks make " + block_counts + " = " + std::to_string(total_cells) +
                " cells, more than specdec supports (" + std::to_string(kMaxSweepCells) + "); split the grid into several sweeps");
  }
  std::set<std::string> keys, trees;
  for (size_t b = 0; b < blocks.size(); ++b) {
    const std::string& where = block_where[b];
    const json& block = blocks[b];
    const std::vector<std::pair<std::string, json>>& present = block_axes[b];
    std::function<void(size_t, Cell)> expand = [&](size_t a, Cell c) {
      if (a == present.size()) {
        if (needs_drafter(c) && !block.contains("drafter")) c.drafter = default_drafter(canonical_drafters, s.model, c.method.name);
        c = normalized(c);
        check_cell(c, where, trees);
        if (keys.insert(c.key()).second) s.cells.push_back(c);  // a repeated configuration runs once
        return;
      }
      for (size_t i = 0; i < present[a].second.size(); ++i) {
        Cell next = c;
        set_axis(next, present[a].first, present[a].second[i], where + "." + present[a].first + index_suffix(i));
        expand(a + 1, next);
      }
    };
    expand(0, Cell{});
  }
  if (s.cells.empty()) throw Error(source + ": the grid has no cells");
  if (static_cast<uint64_t>(s.run_count()) > kMaxSweepRuns) {
    throw Error(source + ": " + std::to_string(s.cells.size()) + " cells x " + std::to_string(s.prompts.size()) + " prompts make " +
                std::to_string(s.run_count()) + " runs, more than specdec supports (" + std::to_string(kMaxSweepRuns) +
                "); take fewer prompts (per_category) or split the sweep");
  }

  if (j.contains("predict")) {
    const json& p = j["predict"];
    const std::string where = source + ": predict";
    if (!p.is_object() || !p.contains("hardware") || !p.contains("model")) {
      throw Error(where + ": expected {\"hardware\": SPEC, \"model\": SPEC, \"drafters\": {method: SPEC}}");
    }
    for (const auto& [key, _] : p.items()) {
      if (key != "hardware" && key != "model" && key != "engine" && key != "drafters" && key != "batch") {
        throw Error(where + ": unknown field '" + key + "'; known: hardware, model, engine, drafters, batch");
      }
    }
    s.predict_enabled = true;
    s.predict.hardware = as_string(p["hardware"], where + ".hardware");
    s.predict.model = as_string(p["model"], where + ".model");
    if (p.contains("engine")) s.predict.engine = as_string(p["engine"], where + ".engine");
    if (p.contains("batch")) s.predict.batch = as_int(p["batch"], where + ".batch");
    if (s.predict.batch < 1) throw Error(where + ".batch must be >= 1");
    const json drafter_specs = p.value("drafters", json::object());
    if (!drafter_specs.is_object()) throw Error(where + ".drafters must be an object of method -> simulator drafter spec");
    for (const auto& [m, d] : drafter_specs.items()) {
      s.predict.drafters[method_entry(m, where + ".drafters").name] = as_string(d, where + ".drafters." + m);
    }
    for (const Cell& c : s.cells) {
      if (needs_drafter(c) && !s.predict.drafters.contains(c.method.name)) {
        throw Error(where + ".drafters has no simulator drafter spec for method '" + c.method.name + "' (e.g. \"eagle\": \"eagle1-llama3-8b\")");
      }
    }
  }
  return s;
}

SweepSpec load_sweep_spec(const std::string& path, const std::string& prompts_override) {
  // A regular file of bounded size, nested at most kMaxJsonDepth deep (deeper values overflow the
  // stack when copied or compared).
  return parse_sweep_spec(read_json_file(path, "sweep spec"), path, prompts_override);
}

bool shard_owns(const Shard& s, int64_t run, int64_t prompts, bool batched_cell) {
  return s.owns(batched_cell ? run / prompts : run);
}

Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  Shard s;
  try {
    size_t a = 0, b = 0;
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    s.index = std::stoi(text.substr(0, slash), &a);
    s.count = std::stoi(text.substr(slash + 1), &b);
    if (a != slash || b != text.size() - slash - 1) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw Error("--shard '" + text + "': expected I/N, e.g. 2/4");
  }
  if (s.count < 1 || s.index < 1 || s.index > s.count) {
    throw Error("--shard '" + text + "': expected 1 <= I <= N (shards are numbered from 1)");
  }
  return s;
}

}  // namespace specdec::sweep
