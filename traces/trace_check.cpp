// specdec trace check: every rule of traces/SCHEMA.md, each violation collected as a problem.
#include "traces/trace_check.hpp"

#include "reference/methods/registry.hpp"
#include "reference/policies/policy_spec.hpp"

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>

#include "reference/core/error.hpp"
#include "reference/core/format.hpp"
#include "reference/io/json_input.hpp"
#include "traces/batched_trace.hpp"
#include "traces/contained_read.hpp"
#include "traces/hdf5.hpp"
#include "traces/trace.hpp"
#include "traces/trace_diagnostics.hpp"
#include "traces/trace_file.hpp"
#include "traces/trace_layout.hpp"

namespace specdec {

const std::vector<ConfigKey>& run_config_keys() {
  static const std::vector<ConfigKey> keys = {
      {"method", "object", true, "the decoding method and its parameters (keys below)"},
      {"max_new_tokens", "integer", true, "the generation limit the run used (>= 1)"},
      {"stop_at_eos", "boolean", true, "whether the run stopped at the target's eos token"},
      {"sequence", "integer", false, "sequence id keying the random streams, 0 <= id < 2^32; required in a batched trace, equal to its group's id"},
      {"backend", "string", false, "the backend or engine that computed the run (provenance)"},
      {"threads", "integer", false, "threads used (provenance)"},
      {"logits", "string", false, "how logits rows were kept: full | topk"},
      {"logit_top_k", "integer", false, "k of top-k logits rows"},
      {"engine", "any", false, "free-form description of an outside engine that wrote the trace"},
      {"policy", "any", false, "the speculation policy: {\"policy\": name, ...parameters} or a name; absent = fixed"},
      {"draft_budget_ms", "number", false, "the draft time budget (ms) that switched slow drafters off (provenance)"},
      {"fallback", "object", false, "the fallback drafter's method object (as 'method'; provenance)"},
      {"drafter_fault", "string", false, "a fault injected into the drafter, KIND@STEP (provenance)"},
      {"fallbacks", "array", false, "drafters switched off during the run: [{step, drafter, reason, next}]"},
  };
  return keys;
}

const std::vector<ConfigKey>& method_config_keys() {
  static const std::vector<ConfigKey> keys = {
      {"method", "string", true, "equal to the root attribute 'method'"},
      {"drafter", "string", false, "drafter checkpoint path; required for every method but sequential"},
      {"tree", "string", false, "chain | dynamic | a static tree name (e.g. mc_sim_7b_63); required but for sequential"},
      {"k", "integer", false, "draft length K (chains, P-EAGLE)"},
      {"depth", "integer", false, "dynamic tree depth"},
      {"tree_top_k", "integer", false, "dynamic tree: children expanded per node"},
      {"total_tokens", "integer", false, "dynamic tree: draft nodes kept after reranking"},
      {"force_depth", "boolean", false, "K beyond the drafter's trained depth (P-EAGLE)"},
  };
  return keys;
}

const std::vector<ConfigKey>& sampling_config_keys() {
  static const std::vector<ConfigKey> keys = {
      {"mode", "string", true, "greedy | sample | coupled"},
      {"temperature", "number", false, "sampling temperature (default 1)"},
      {"top_k", "integer", false, "top-k filter, 0 = off"},
      {"top_p", "number", false, "nucleus filter, 1 = off"},
      {"seed", "integer", false, "seed; equal to /meta @seed"},
  };
  return keys;
}

namespace {
namespace L = trace_layout;
using h5::Dtype;
using nlohmann::json;

// The ids a batch holds, for messages: all of a small batch, the first few of a large one.
std::string held_ids(const std::vector<int64_t>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size() && i < 8; ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  if (ids.size() > 8) s += ", ... (" + std::to_string(ids.size()) + " sequences)";
  return s;
}

class Checker {
 public:
  explicit Checker(std::string file) : file_(std::move(file)) {}
  TraceCheckResult result;

  void add(const std::string& where, const std::string& what) { result.problems.push_back({where, what}); }

  // Runs `fn`; a specdec::Error becomes a problem at `where` (the file and object prefixes of
  // the message are dropped: they are the problem's own).
  bool attempt(const std::string& where, const std::function<void()>& fn) {
    try {
      fn();
      return true;
    } catch (const std::exception& e) {
      std::string m = e.what();
      if (m.rfind(file_ + ": ", 0) == 0) m = m.substr(file_.size() + 2);
      const std::size_t colon = m.find(": ");
      std::string at = where;
      if (!m.empty() && m[0] == '/' && colon != std::string::npos) {  // "<object>: <what>" from h5
        at = m.substr(0, colon);
        m = m.substr(colon + 2);
      }
      add(at, m);
      return false;
    }
  }

  static std::string child(const std::string& group, const std::string& name) {
    return group == "/" ? "/" + name : group + "/" + name;
  }
  static std::string attr_where(const std::string& object, const std::string& name) { return object + " @" + name; }

  // A string attribute, present and a string; empty optional otherwise (with a problem).
  std::optional<std::string> string_attr(const h5::Object& o, const std::string& name, bool required = true) {
    const std::string w = attr_where(o.path(), name);
    if (!o.has_attribute(name)) {
      if (required) add(w, "missing, expected a string attribute");
      return std::nullopt;
    }
    std::optional<std::string> v;
    attempt(w, [&] { v = o.read_string_attribute(name); });
    return v;
  }
  std::optional<int64_t> int64_attr(const h5::Object& o, const std::string& name, bool required = true) {
    const std::string w = attr_where(o.path(), name);
    if (!o.has_attribute(name)) {
      if (required) add(w, "missing, expected an int64 attribute");
      return std::nullopt;
    }
    std::optional<int64_t> v;
    attempt(w, [&] { v = o.read_int64_attribute(name); });
    return v;
  }

  // A dataset of the given dtype and rank; nullopt (with a problem) when missing or different.
  std::optional<h5::Dataset> dataset(const h5::Group& g, const std::string& name, Dtype dtype, std::size_t rank,
                                     const std::string& shape_doc, bool required = true) {
    const std::string w = child(g.path(), name);
    if (!g.has(name)) {
      if (required) add(w, std::string("missing, expected ") + h5::dtype_name(dtype) + " " + shape_doc);
      return std::nullopt;
    }
    if (!g.has_dataset(name)) {
      add(w, std::string("is not a dataset, expected ") + h5::dtype_name(dtype) + " " + shape_doc);
      return std::nullopt;
    }
    std::optional<h5::Dataset> ds;
    if (!attempt(w, [&] { ds.emplace(g.open_dataset(name)); })) return std::nullopt;
    bool ok = true;
    const Dtype d = ds->dtype();
    if (d != dtype) {
      add(w, std::string("dtype is ") + h5::dtype_name(d) + ", expected " + h5::dtype_name(dtype) + " " + shape_doc);
      ok = false;
    }
    const std::vector<uint64_t> shape = ds->shape();
    if (dtype != Dtype::string && shape.size() != rank) {
      add(w, shape_text(shape) + ", expected " + h5::dtype_name(dtype) + " " + shape_doc + " (a " + std::to_string(rank) + "-D dataset)");
      ok = false;
    }
    if (ok && !attempt(w, [&] { (void)ds->checked_elements(); })) ok = false;
    if (!ok) return std::nullopt;
    return ds;
  }

  static std::string shape_text(const std::vector<uint64_t>& s) {
    std::string out = "shape (";
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + (s.size() == 1 ? ",)" : ")");
  }

  template <class T>
  std::optional<std::vector<T>> vector(const h5::Group& g, const std::string& name, const std::string& shape_doc,
                                       bool required = true) {
    if (!dataset(g, name, h5::DtypeOf<T>::value, 1, shape_doc, required)) return std::nullopt;
    std::optional<std::vector<T>> v;
    attempt(child(g.path(), name), [&] { v = g.read_vector<T>(name); });
    return v;
  }
  template <class T>
  std::optional<std::vector<T>> matrix(const h5::Group& g, const std::string& name, const std::string& shape_doc,
                                       uint64_t* rows, uint64_t* cols, bool required = true) {
    if (!dataset(g, name, h5::DtypeOf<T>::value, 2, shape_doc, required)) return std::nullopt;
    std::optional<std::vector<T>> v;
    attempt(child(g.path(), name), [&] { v = g.read_matrix<T>(name, rows, cols); });
    return v;
  }
  std::optional<std::string> string_dataset(const h5::Group& g, const std::string& name, bool required = true) {
    const std::string w = child(g.path(), name);
    if (!g.has(name)) {
      if (required) add(w, "missing, expected a scalar string dataset");
      return std::nullopt;
    }
    std::optional<std::string> v;
    attempt(w, [&] { v = g.read_string(name); });
    return v;
  }

  // Offsets of a ragged column: S + 1 entries, from 0, non-decreasing, ending at `flat`.
  std::optional<std::vector<int64_t>> offsets(const h5::Group& g, const std::string& name, std::optional<long> S,
                                              std::optional<uint64_t> flat, const std::string& flat_name) {
    auto off = vector<int64_t>(g, name, "[S+1]");
    if (!off) return std::nullopt;
    const std::string w = child(g.path(), name);
    bool ok = true;
    if (S && off->size() != static_cast<std::size_t>(*S + 1)) {
      add(w, std::to_string(off->size()) + " offsets, expected " + std::to_string(*S + 1) + " (number of steps + 1)");
      ok = false;
    }
    if (off->empty()) return std::nullopt;
    if ((*off)[0] != 0) {
      add(w, "first offset is " + std::to_string((*off)[0]) + ", expected 0");
      ok = false;
    }
    for (std::size_t i = 1; i < off->size(); ++i) {
      if ((*off)[i] < (*off)[i - 1]) {
        add(w, "offsets decrease at index " + std::to_string(i) + " (" + std::to_string((*off)[i - 1]) + " then " +
                   std::to_string((*off)[i]) + "), expected non-decreasing offsets");
        ok = false;
        break;
      }
    }
    if (flat && static_cast<uint64_t>(off->back()) != *flat) {
      add(w, "last offset is " + std::to_string(off->back()) + ", expected " + std::to_string(*flat) + " (the length of " +
                 child(g.path(), flat_name) + ")");
      ok = false;
    }
    if (!ok) return std::nullopt;
    return off;
  }

  // Token ids in [0, V) (or -1 where `allow_none`).
  void token_range(const std::string& where, const std::vector<int32_t>& ids, std::optional<int64_t> V, bool allow_none = false) {
    if (!V) return;
    int bad = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const int32_t id = ids[i];
      if ((id < 0 && !(allow_none && id == -1)) || id >= *V) {
        if (bad++ < 3) {
          add(where, "entry " + std::to_string(i) + " is token id " + std::to_string(id) + ", expected 0 <= id < vocab_size " +
                         std::to_string(*V) + (allow_none ? " or -1" : "") + " (the target's vocabulary)");
        }
      }
    }
    if (bad > 3) add(where, std::to_string(bad - 3) + " more token ids outside the vocabulary");
  }

  // JSON object with known keys.
  void check_keys(const std::string& where, const json& j, const std::vector<ConfigKey>& keys, const char* what) {
    for (const ConfigKey& k : keys) {
      if (k.required && !j.contains(k.key)) add(where, std::string("missing ") + what + " key '" + k.key + "' (" + k.type + ": " + k.meaning + ")");
      if (!j.contains(k.key)) continue;
      const json& v = j[k.key];
      const std::string t = k.type;
      const bool ok = t == "any" || (t == "object" && v.is_object()) || (t == "string" && v.is_string()) ||
                      (t == "integer" && v.is_number_integer()) || (t == "boolean" && v.is_boolean()) ||
                      (t == "number" && v.is_number()) || (t == "array" && v.is_array());
      if (!ok) add(where, std::string(what) + " key '" + k.key + "' is " + v.dump() + ", expected " + (t == "integer" ? "an " : "a ") + t);
    }
    std::vector<std::string> known;
    for (const ConfigKey& k : keys) known.push_back(k.key);
    for (const auto& [key, value] : j.items()) {
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        std::string list;
        for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
        add(where, std::string("unknown ") + what + " key '" + key + "', expected only " + list);
      }
    }
  }

  void run(const h5::File& f);

 private:
  // /steps/draft_sources (schema 1.3): its columns, their offsets, one source per draft node of a
  // step or none, origins and positions inside the sequence the step drafted from.
  void check_draft_sources(const h5::Group& steps, std::optional<long> S, const std::optional<std::vector<int64_t>>& positions,
                           const std::optional<std::vector<std::vector<int32_t>>>& drafts);
  // The root attributes every trace file has; the major version when it is one checked here.
  std::optional<int> check_file_attributes(const h5::File& f);
  // One sequence's run under `f`: the root of a 1.x file, or the group of sequence `sequence` in
  // a batched (2.x) file, whose problems are then named by that group's path.
  void check_run(const h5::Group& f, std::optional<int64_t> sequence);
  void check_batch(const h5::File& f);
  // Literal "/steps/..." places of problems found in a sequence group, under that group.
  void rebase(std::size_t first_problem, const std::string& group);
  // /output/stop_reason against the run's configuration and its output: what ends a run
  // (reference/decoding/sequence_decoder.cpp) is the first eos when stop_at_eos, else
  // max_new_tokens tokens.
  void check_stop_reason(const std::string& stop, const std::vector<int32_t>& output);

  // An embedded JSON document (config_json, sampling_json): parsed under the depth limit of
  // reference/io/json_input.hpp; a problem at `where` (and nullopt) unless it is a JSON object.
  std::optional<json> json_object(const std::string& where, const std::string& text, const std::string& expected) {
    try {
      json j = parse_json(text, where);
      if (j.is_object()) return j;
      add(where, "is not a JSON object, expected " + expected);
    } catch (const std::exception& e) {
      std::string m = e.what();
      if (m.rfind(where + ": ", 0) == 0) m = m.substr(where.size() + 2);
      add(where, m + ", expected " + expected);
    }
    return std::nullopt;
  }

  std::string file_;
  std::optional<int64_t> vocab_;      // the target's vocabulary
  std::optional<std::string> method_;
  // Of the run being checked, when its configuration gives them: max_new_tokens, stop_at_eos and
  // the target's eos token ids (its config.json's eos_token_id; none when that is null).
  std::optional<int64_t> max_new_tokens_;
  std::optional<bool> stop_at_eos_;
  std::optional<std::vector<int64_t>> eos_ids_;
};

void Checker::run(const h5::File& f) {
  const std::optional<int> major = check_file_attributes(f);
  if (major && *major == kBatchedTraceSchemaMajor) {
    check_batch(f);
  } else {
    check_run(f, std::nullopt);
  }
}

std::optional<int> Checker::check_file_attributes(const h5::File& f) {
  std::optional<int> major;
  const auto format = string_attr(f, L::kFormat);
  if (format && *format != kTraceFormat) add(attr_where("/", L::kFormat), "is \"" + *format + "\", expected \"" + kTraceFormat + "\"");
  if (const auto v = string_attr(f, L::kSchemaVersion)) {
    result.schema_version = *v;
    static const std::regex re(R"(([0-9]{1,6})\.([0-9]{1,6}))");
    std::smatch m;
    const std::string supported = "1.0 to " + trace_schema_version() + " (one sequence) or " + batched_trace_schema_version() + " (a batch)";
    if (!std::regex_match(*v, m, re)) {
      add(attr_where("/", L::kSchemaVersion), "is \"" + *v + "\", expected \"<major>.<minor>\" such as \"" + trace_schema_version() + "\"");
    } else if (const int M = std::stoi(m[1]), n = std::stoi(m[2]);
               (M == kTraceSchemaMajor && n <= kTraceSchemaMinor) || (M == kBatchedTraceSchemaMajor && n <= kBatchedTraceSchemaMinor)) {
      major = M;
    } else {
      add(attr_where("/", L::kSchemaVersion), "is \"" + *v + "\", an unsupported version, expected " + supported);
    }
  }
  string_attr(f, L::kSpecdecVersion);
  if (const auto c = string_attr(f, L::kCreatedUtc)) {
    static const std::regex re(R"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z)");
    if (!std::regex_match(*c, re)) add(attr_where("/", L::kCreatedUtc), "is \"" + *c + "\", expected ISO 8601 UTC \"YYYY-MM-DDTHH:MM:SSZ\"");
  }
  if (const auto c = string_attr(f, L::kExactnessContract, false)) {
    if (c->empty()) add(attr_where("/", L::kExactnessContract), "is empty, expected a contract version such as \"" + std::string(exact::kContractVersion) + "\"");
  }
  return major;
}

void Checker::rebase(std::size_t first_problem, const std::string& group) {
  for (std::size_t i = first_problem; i < result.problems.size(); ++i) {
    std::string& w = result.problems[i].where;
    if (w.rfind(group + "/", 0) == 0 || w.rfind(group + " ", 0) == 0 || w == group) continue;  // already the group's
    if (w == "/") w = group;
    else if (w.rfind("/ ", 0) == 0) w = group + w.substr(1);  // "/ @method"
    else if (!w.empty() && w[0] == '/') w = group + w;
  }
}

void Checker::check_batch(const h5::File& f) {
  const std::string bw = std::string("/") + L::kBatch;
  std::optional<std::vector<int64_t>> ids;
  if (!f.has_group(L::kBatch)) {
    add(bw, "missing, expected a group with the batch's sequence ids and schedule");
  } else {
    const h5::Group batch = f.open_group(L::kBatch);
    if (const auto b = int64_attr(batch, L::kMaxInFlight); b && *b < 1) add(attr_where(bw, L::kMaxInFlight), "is " + std::to_string(*b) + ", expected >= 1");
    ids = vector<int64_t>(batch, L::kSequenceIds, "[N]");
    if (ids) {
      const std::string w = bw + "/" + L::kSequenceIds;
      if (ids->empty()) add(w, "no sequences, expected at least one");
      std::map<int64_t, std::size_t> first;
      for (std::size_t i = 0; i < ids->size(); ++i) {
        const int64_t id = (*ids)[i];
        if (id < 0 || id > 0xFFFFFFFFLL) add(w, "entry " + std::to_string(i) + " is " + std::to_string(id) + ", expected a sequence id in [0, 2^32)");
        const auto [it, fresh] = first.emplace(id, i);
        if (!fresh) add(w, "sequence id " + std::to_string(id) + " appears twice (entries " + std::to_string(it->second) + " and " + std::to_string(i) + "), expected distinct ids");
      }
    }
    const std::string sw = bw + "/" + L::kSchedule;
    if (!batch.has_group(L::kSchedule)) {
      add(sw, "missing, expected a group: per batch step, the sequences of its target forward");
    } else {
      const h5::Group sg = batch.open_group(L::kSchedule);
      const auto seq = vector<int64_t>(sg, L::kScheduleSequence, "[E]");
      const std::string off_name = std::string(L::kScheduleSequence) + L::kOffsetsSuffix;
      if (seq) {
        if (const auto off = offsets(sg, off_name, std::nullopt, seq->size(), L::kScheduleSequence)) {
          const std::set<int64_t> listed = ids ? std::set<int64_t>(ids->begin(), ids->end()) : std::set<int64_t>();
          int empty = 0, unknown = 0;  // the first few of each are listed, then their count
          for (std::size_t t = 0; t + 1 < off->size(); ++t) {
            if ((*off)[t + 1] == (*off)[t] && empty++ < 3) add(sw + "/" + off_name, "batch step " + std::to_string(t) + " holds no sequence, expected at least one");
            for (auto e = static_cast<std::size_t>((*off)[t]); ids && e < static_cast<std::size_t>((*off)[t + 1]); ++e) {
              if (!listed.count((*seq)[e]) && unknown++ < 3) {
                add(sw + "/" + L::kScheduleSequence, "batch step " + std::to_string(t) + " names sequence " + std::to_string((*seq)[e]) +
                                                         ", which the trace does not hold (it holds " + held_ids(*ids) + ")");
              }
            }
          }
          if (empty > 3) add(sw + "/" + off_name, std::to_string(empty - 3) + " more batch steps hold no sequence");
          if (unknown > 3) add(sw + "/" + L::kScheduleSequence, std::to_string(unknown - 3) + " more entries name sequences the trace does not hold");
        }
      }
      for (const char* name : {L::kScheduleStep, L::kScheduleRows}) {
        const auto col = vector<int64_t>(sg, name, "aligned with sequence");
        if (col && seq && col->size() != seq->size()) {
          add(sw + "/" + name, std::to_string(col->size()) + " entries, expected " + std::to_string(seq->size()) + " (one per entry of " + sw + "/sequence)");
        }
      }
    }
  }

  const std::string qw = std::string("/") + L::kSequences;
  if (!f.has_group(L::kSequences)) {
    add(qw, "missing, expected one group per sequence, named by its id");
    return;
  }
  const h5::Group sequences = f.open_group(L::kSequences);
  std::set<std::string> names;
  for (const int64_t id : ids ? *ids : std::vector<int64_t>()) names.insert(std::to_string(id));
  for (const std::string& member : sequences.members()) {
    if (!names.count(member)) add(qw + "/" + member, "not a sequence listed in /batch/sequence_ids, expected one group per listed id, named by it in decimal");
  }
  if (!ids) return;
  long steps = 0;
  bool steps_known = true;
  std::set<int64_t> checked;
  for (const int64_t id : *ids) {
    if (!checked.insert(id).second) continue;  // a repeated id is a problem of its own, above
    const std::string name = std::to_string(id);
    const std::string gw = qw + "/" + name;
    if (!sequences.has_group(name)) {
      add(gw, "missing, expected the group of sequence " + name + " (listed in /batch/sequence_ids)");
      steps_known = false;
      continue;
    }
    const std::size_t first = result.problems.size();
    vocab_.reset();
    method_.reset();
    result.steps = -1;
    check_run(sequences.open_group(name), id);
    rebase(first, gw);
    if (result.steps < 0) steps_known = false;
    steps += std::max(result.steps, 0L);
  }
  result.sequences = static_cast<long>(ids->size());
  result.steps = steps_known ? steps : -1;
}

void Checker::check_run(const h5::Group& f, std::optional<int64_t> sequence) {
  max_new_tokens_.reset();
  stop_at_eos_.reset();
  eos_ids_.reset();
  method_ = string_attr(f, L::kMethod);
  // A trace names its method by its registry name (never an alias), which says whether it has a drafter.
  const MethodEntry* entry = nullptr;
  if (method_) {
    for (const MethodEntry& e : method_registry())
      if (e.name == *method_) entry = &e;
    if (!entry) add(attr_where("/", L::kMethod), "is \"" + *method_ + "\", expected one of " + known_methods());
  }
  const bool method_drafts = entry && specdec::method_drafts(*entry);
  // Draft-free methods (n-gram lookup, suffix decoding) draft without a checkpoint: no drafter model.
  const bool loads_checkpoint = entry && entry->drafter.loads_checkpoint();

  // /meta
  std::optional<uint64_t> seed;
  if (!f.has_group(L::kMeta)) {
    add("/meta", "missing, expected a group");
  } else {
    const h5::Group meta = f.open_group(L::kMeta);
    if (!meta.has_attribute(L::kSeed)) {
      add("/meta @seed", "missing, expected a uint64 attribute");
    } else {
      attempt("/meta @seed", [&] { seed = meta.read_uint64_attribute(L::kSeed); });
    }
    const auto cj = string_dataset(meta, L::kConfigJson);
    if (const auto parsed = cj ? json_object("/meta/config_json", *cj, "the run configuration") : std::nullopt) {
      const json& j = *parsed;
      {
        check_keys("/meta/config_json", j, run_config_keys(), "run-config");
        if (j.contains("max_new_tokens") && j["max_new_tokens"].is_number_integer()) {
          const json& m = j["max_new_tokens"];
          const bool in_range = m.is_number_unsigned() ? m.get<uint64_t>() >= 1 && m.get<uint64_t>() <= INT32_MAX
                                                       : m.get<int64_t>() >= 1 && m.get<int64_t>() <= INT32_MAX;
          if (!in_range) {
            add("/meta/config_json", "max_new_tokens is " + m.dump() + ", expected 1 <= max_new_tokens <= 2^31-1");
          } else {
            max_new_tokens_ = m.get<int64_t>();
          }
        }
        if (j.contains("stop_at_eos") && j["stop_at_eos"].is_boolean()) stop_at_eos_ = j["stop_at_eos"].get<bool>();
        if (sequence && !j.contains("sequence")) {
          add("/meta/config_json", "missing run-config key 'sequence', expected " + std::to_string(*sequence) + " (the sequence's id)");
        } else if (j.contains("sequence") && j["sequence"].is_number_integer()) {
          const json& q = j["sequence"];
          const bool in_range = q.is_number_unsigned() ? q.get<uint64_t>() <= 0xFFFFFFFFULL : q.get<int64_t>() >= 0;
          if (!in_range) add("/meta/config_json", "sequence is " + q.dump() + ", expected a sequence id in [0, 2^32)");
          else if (sequence && q.get<int64_t>() != *sequence) add("/meta/config_json", "sequence is " + q.dump() + ", expected " + std::to_string(*sequence) + " (the id of its group)");
        }
        if (j.contains("policy")) {
          attempt("/meta/config_json", [&] { policy_from_json(j["policy"], "policy"); });
        }
        if (j.contains("fallbacks") && j["fallbacks"].is_array()) {
          for (std::size_t i = 0; i < j["fallbacks"].size(); ++i) {
            const json& f = j["fallbacks"][i];
            const bool ok = f.is_object() && f.contains("step") && f["step"].is_number_integer() && f["step"].get<int64_t>() >= 1 &&
                            f.contains("drafter") && f["drafter"].is_string() && f.contains("reason") && f["reason"].is_string() &&
                            f.contains("next") && f["next"].is_string();
            if (!ok) add("/meta/config_json", "fallbacks[" + std::to_string(i) + "] is " + f.dump() + ", expected {step >= 1, drafter, reason, next}");
          }
        }
        if (j.contains("logits") && j["logits"] != "full" && j["logits"] != "topk") add("/meta/config_json", "logits is " + j["logits"].dump() + ", expected \"full\" or \"topk\"");
        if (j.contains("method") && j["method"].is_object()) {
          const json& m = j["method"];
          // The shape keys, and the method's own parameters (its registry entry's, e.g. ngram's n_min).
          std::vector<ConfigKey> keys = method_config_keys();
          if (entry) {
            for (const MethodParam& p : entry->params) keys.push_back({p.name.c_str(), p.is_choice() ? "string" : p.integer ? "integer" : "number", false, p.doc.c_str()});
          }
          check_keys("/meta/config_json method", m, keys, "method-config");
          for (const MethodParam& p : entry ? entry->params : std::vector<MethodParam>()) {
            if (p.is_choice() && m.contains(p.name) && m[p.name].is_string() &&
                std::find(p.choices.begin(), p.choices.end(), m[p.name].get<std::string>()) == p.choices.end()) {
              std::string list;
              for (const std::string& c : p.choices) list += (list.empty() ? "" : " | ") + c;
              add("/meta/config_json method", p.name + " is " + m[p.name].dump() + ", expected " + list + " (" + p.doc + ")");
            }
            if (!m.contains(p.name) || !m[p.name].is_number()) continue;
            const double v = m[p.name].get<double>();
            if (v < p.min || v > p.max) {
              add("/meta/config_json method", p.name + " is " + m[p.name].dump() + ", expected " + format_brief(p.min) + " <= " + p.name +
                                                  " <= " + format_brief(p.max) + " (" + p.doc + ")");
            }
          }
          if (m.contains("method") && m["method"].is_string() && method_ && m["method"] != *method_) {
            add("/meta/config_json method", "method is " + m["method"].dump() + ", expected \"" + *method_ + "\" (the root attribute 'method')");
          }
          if (method_drafts) {
            for (const char* k : {"drafter", "tree"}) {
              if (k == std::string("drafter") && !loads_checkpoint) continue;  // a draft-free method has no checkpoint
              if (!m.contains(k)) add("/meta/config_json method", std::string("missing method-config key '") + k + "', required for method " + *method_);
            }
          }
          for (const char* k : {"k", "depth", "tree_top_k", "total_tokens"}) {
            if (m.contains(k) && m[k].is_number_integer() && (m[k].get<int64_t>() < 1 || m[k].get<int64_t>() > INT32_MAX)) {
              add("/meta/config_json method", std::string(k) + " is " + m[k].dump() + ", expected a positive int32");
            }
          }
        }
      }
    }
    const auto sj = string_dataset(meta, L::kSamplingJson);
    if (const auto parsed = sj ? json_object("/meta/sampling_json", *sj, "the sampling configuration") : std::nullopt) {
      const json& j = *parsed;
      {
        check_keys("/meta/sampling_json", j, sampling_config_keys(), "sampling");
        if (j.contains("mode") && j["mode"] != "greedy" && j["mode"] != "sample" && j["mode"] != "coupled") {
          add("/meta/sampling_json", "mode is " + j["mode"].dump() + ", expected \"greedy\", \"sample\" or \"coupled\"");
        }
        if (j.contains("seed") && j["seed"].is_number_integer() && seed && j["seed"].get<uint64_t>() != *seed) {
          add("/meta/sampling_json", "seed is " + j["seed"].dump() + ", expected " + std::to_string(*seed) + " (/meta @seed)");
        }
      }
    }
    if (!meta.has_group(L::kModels)) {
      add("/meta/models", "missing, expected a group with one group per model role");
    } else {
      const h5::Group models = meta.open_group(L::kModels);
      std::set<std::string> roles;
      for (const std::string& role : models.members()) {
        const std::string w = "/meta/models/" + role;
        if (role != "target" && role != "drafter") {
          add(w, "unknown model role '" + role + "', expected target or drafter");
          continue;
        }
        if (!models.has_group(role)) {
          add(w, "is not a group");
          continue;
        }
        roles.insert(role);
        const h5::Group g = models.open_group(role);
        string_attr(g, L::kPath);
        if (const auto fp = string_attr(g, L::kFingerprint)) {
          static const std::regex re("fnv1a64:[0-9a-f]{16}");
          if (!std::regex_match(*fp, re)) {
            add(attr_where(w, L::kFingerprint), "is \"" + *fp + "\", expected \"fnv1a64:\" and 16 lower-case hex digits (SCHEMA.md, \"Fingerprints\")");
          }
        }
        const auto cj = string_dataset(g, L::kConfigJson);
        if (const auto parsed = cj ? json_object(w + "/config_json", *cj, "the model's config.json") : std::nullopt; parsed && role == "target") {
          const json& j = *parsed;
          if (!j.contains("vocab_size") || !j["vocab_size"].is_number_integer() || j["vocab_size"].get<int64_t>() < 1 ||
              j["vocab_size"].get<int64_t>() > INT32_MAX) {
            add(w + "/config_json", "has no positive integer 'vocab_size', expected the model's config.json");
          } else {
            vocab_ = j["vocab_size"].get<int64_t>();
          }
          // The eos ids as the model config reads them: an id, a list of ids, or null (none). A
          // config without the key leaves them unknown (its model type's default is not read here).
          if (j.contains("eos_token_id")) {
            const json& e = j["eos_token_id"];
            std::vector<int64_t> ids;
            bool ok = e.is_null() || e.is_number_integer() || e.is_array();
            if (e.is_number_integer()) ids.push_back(e.get<int64_t>());
            for (std::size_t i = 0; ok && e.is_array() && i < e.size(); ++i) {
              ok = e[i].is_number_integer();
              if (ok) ids.push_back(e[i].get<int64_t>());
            }
            if (ok) eos_ids_ = std::move(ids);
          }
        }
      }
      if (!roles.count("target")) add("/meta/models/target", "missing, expected the target model's group");
      if (loads_checkpoint && !roles.count("drafter")) {
        add("/meta/models/drafter", "missing, expected the drafter's group for method " + *method_);
      }
      if (entry && !method_drafts && roles.count("drafter")) add("/meta/models/drafter", "present, but a " + *method_ + " run has no drafter");
      if (method_drafts && !loads_checkpoint && roles.count("drafter")) {
        add("/meta/models/drafter", "present, but a " + *method_ + " run drafts from " + entry->drafter.description + ": no drafter model");
      }
    }
  }

  // /prompt, /output
  std::optional<std::vector<int32_t>> prompt, output;
  if (!f.has_group("prompt")) add("/prompt", "missing, expected a group"); else prompt = vector<int32_t>(f.open_group("prompt"), "tokens", "[P]");
  if (prompt) token_range("/prompt/tokens", *prompt, vocab_);
  if (prompt && prompt->empty()) add("/prompt/tokens", "empty, expected at least one prompt token");
  if (!f.has_group("output")) {
    add("/output", "missing, expected a group");
  } else {
    const h5::Group o = f.open_group("output");
    output = vector<int32_t>(o, "tokens", "[N]");
    if (output) token_range("/output/tokens", *output, vocab_);
    if (const auto stop = string_dataset(o, "stop_reason")) {
      if (*stop != "max_tokens" && *stop != "eos") add("/output/stop_reason", "is \"" + *stop + "\", expected \"max_tokens\" or \"eos\"");
      else if (output) check_stop_reason(*stop, *output);
    }
  }

  // /steps
  if (!f.has_group(L::kSteps)) {
    add("/steps", "missing, expected a group");
    return;
  }
  const h5::Group g = f.open_group(L::kSteps);
  const auto positions = vector<int64_t>(g, L::kPositions, "[S]");
  std::optional<long> S;
  if (positions) S = static_cast<long>(positions->size());
  result.steps = S ? *S : -1;
  if (S && *S == 0) add("/steps/positions", "no steps, expected at least one (step 0 is the prefill)");

  // A ragged column: flat values + offsets; returns per-step slices.
  auto ragged = [&](const std::string& name, auto tag, bool required) -> std::optional<std::vector<std::vector<decltype(tag)>>> {
    using T = decltype(tag);
    const auto flat = vector<T>(g, name, "[total entries]", required);
    const bool has_off = g.has(name + L::kOffsetsSuffix);
    if (!flat) {
      return std::nullopt;
    }
    if (!has_off) {
      add(child("/steps", name + L::kOffsetsSuffix), "missing, expected int64 [S+1] (required with " + name + ")");
      return std::nullopt;
    }
    const auto off = offsets(g, name + L::kOffsetsSuffix, S, flat->size(), name);
    if (!off || !S) return std::nullopt;
    std::vector<std::vector<T>> per(static_cast<std::size_t>(*S));
    for (long s = 0; s < *S; ++s) per[s].assign(flat->begin() + (*off)[s], flat->begin() + (*off)[s + 1]);
    return per;
  };
  auto aligned = [&](const std::string& name, const std::string& base, auto tag, const std::optional<std::vector<std::vector<decltype(tag)>>>* shape_of,
                     std::size_t base_len, bool base_ok) {
    using T = decltype(tag);
    (void)shape_of;
    const auto flat = vector<T>(g, name, "aligned with " + base);
    if (flat && base_ok && flat->size() != base_len) {
      add(child("/steps", name), std::to_string(flat->size()) + " entries, expected " + std::to_string(base_len) + " (one per entry of /steps/" + base + ")");
    }
    return flat;
  };

  const auto emitted = ragged(L::kEmittedTokens, int32_t{}, true);
  if (emitted) {
    std::vector<int32_t> all;
    for (std::size_t s = 0; s < emitted->size(); ++s) {
      const std::string w = "/steps/emitted_tokens step " + std::to_string(s);
      if ((*emitted)[s].empty()) add(w, "emits no token, expected at least one per step");
      token_range(w, (*emitted)[s], vocab_);
      all.insert(all.end(), (*emitted)[s].begin(), (*emitted)[s].end());
    }
    if (output && all != *output) {
      std::size_t i = 0;
      while (i < all.size() && i < output->size() && all[i] == (*output)[i]) ++i;
      add("/output/tokens", std::to_string(output->size()) + " tokens, differing from the " + std::to_string(all.size()) +
                                " emitted tokens of all steps at index " + std::to_string(i) + ", expected their concatenation");
    }
    if (positions && prompt) {
      int64_t expect = static_cast<int64_t>(prompt->size());
      for (std::size_t s = 0; s < positions->size() && s < emitted->size(); ++s) {
        if ((*positions)[s] != expect) {
          add("/steps/positions", "step " + std::to_string(s) + " has position " + std::to_string((*positions)[s]) + ", expected " +
                                      std::to_string(expect) + " (prompt length + tokens emitted by earlier steps)");
          break;
        }
        expect += static_cast<int64_t>((*emitted)[s].size());
      }
    }
  }

  std::optional<std::vector<std::vector<int32_t>>> drafts;
  if (g.has(L::kDraftTokens)) {
    drafts = ragged(L::kDraftTokens, int32_t{}, true);
    if (drafts) {
      std::size_t n = 0;
      for (std::size_t s = 0; s < drafts->size(); ++s) {
        token_range("/steps/draft_tokens step " + std::to_string(s), (*drafts)[s], vocab_);
        n += (*drafts)[s].size();
      }
      aligned(L::kDraftParents, L::kDraftTokens, int32_t{}, nullptr, n, true);
    } else if (!g.has(L::kDraftParents)) {
      add("/steps/draft_parents", "missing, expected int32 aligned with draft_tokens (required with draft_tokens)");
    }
  } else if (g.has(L::kDraftParents)) {
    add("/steps/draft_parents", "present without /steps/draft_tokens");
  }
  if (g.has(L::kDraftSources)) check_draft_sources(g, S, positions, drafts);
  if (g.has(L::kAcceptedPath)) ragged(L::kAcceptedPath, int32_t{}, true);
  if (g.has(L::kAcceptDecisions)) {
    const auto dec = ragged(L::kAcceptDecisions, uint8_t{}, true);
    if (dec) {
      std::size_t n = 0;
      for (std::size_t s = 0; s < dec->size(); ++s) {
        n += (*dec)[s].size();
        for (uint8_t d : (*dec)[s]) {
          if (d > 1) {
            add("/steps/accept_decisions step " + std::to_string(s), "decision " + std::to_string(d) + ", expected 0 or 1");
            break;
          }
        }
      }
      if (g.has(L::kAcceptNodes)) aligned(L::kAcceptNodes, L::kAcceptDecisions, int32_t{}, nullptr, n, true);
    }
  } else if (g.has(L::kAcceptNodes)) {
    add("/steps/accept_nodes", "present without /steps/accept_decisions");
  }
  if (g.has(L::kAcceptUniforms)) ragged(L::kAcceptUniforms, double{}, true);
  if (g.has(L::kBonusToken)) {
    if (const auto bonus = vector<int32_t>(g, L::kBonusToken, "[S]")) {
      if (S && static_cast<long>(bonus->size()) != *S) add("/steps/bonus_token", std::to_string(bonus->size()) + " entries, expected one per step (" + std::to_string(*S) + ")");
      token_range("/steps/bonus_token", *bonus, vocab_, true);
    }
  }
  if (g.has(L::kRandomCounters)) {
    uint64_t rows = 0, cols = 0;
    if (matrix<uint32_t>(g, L::kRandomCounters, "[M, 4]", &rows, &cols)) {
      if (cols != 4) add("/steps/random_counters", "has " + std::to_string(cols) + " columns, expected 4 (one Philox4x32 counter block per row)");
      if (!g.has(std::string(L::kRandomCounters) + L::kOffsetsSuffix)) {
        add("/steps/random_counters_offsets", "missing, expected int64 [S+1] (required with random_counters)");
      } else {
        offsets(g, std::string(L::kRandomCounters) + L::kOffsetsSuffix, S, rows, L::kRandomCounters);
      }
    }
  }

  // Logits groups.
  for (const bool draft : {false, true}) {
    const std::string name = draft ? L::kDraftLogits : L::kTargetLogits;
    if (!g.has(name)) continue;
    const std::string w = "/steps/" + name;
    if (!g.has_group(name)) {
      add(w, "is not a group");
      continue;
    }
    const h5::Group lg = g.open_group(name);
    const auto storage = string_attr(lg, L::kStorage);
    const auto V = int64_attr(lg, L::kVocabSize);
    if (V && (*V < 1 || *V > INT32_MAX)) add(attr_where(w, L::kVocabSize), "is " + std::to_string(*V) + ", expected a positive int32");
    if (V && !draft && vocab_ && *V != *vocab_) {
      add(attr_where(w, L::kVocabSize), "is " + std::to_string(*V) + ", expected " + std::to_string(*vocab_) + " (the target's vocab_size)");
    }
    std::optional<uint64_t> R;
    std::string data_name;
    if (storage && *storage == L::kStorageFull) {
      data_name = L::kFull;
      if (const auto ds = dataset(lg, L::kFull, Dtype::float32, 2, "[R, V]")) {
        const auto shape = ds->shape();
        R = shape[0];
        if (V && shape[1] != static_cast<uint64_t>(*V)) add(w + "/full", shape_text(shape) + ", expected (R, " + std::to_string(*V) + ") matching @vocab_size");
      }
    } else if (storage && *storage == L::kStorageTopk) {
      data_name = L::kTopkIds;
      const auto k = int64_attr(lg, L::kK);
      if (k && V && (*k < 1 || *k > *V)) add(attr_where(w, L::kK), "is " + std::to_string(*k) + ", expected 1 <= k <= vocab_size (" + std::to_string(*V) + ")");
      uint64_t rows = 0, cols = 0;
      if (const auto ids = matrix<int32_t>(lg, L::kTopkIds, "[R, k]", &rows, &cols)) {
        R = rows;
        if (k && cols != static_cast<uint64_t>(*k)) add(w + "/topk_ids", "has " + std::to_string(cols) + " columns, expected k = " + std::to_string(*k));
        if (V) {
          for (std::size_t i = 0; i < ids->size(); ++i) {
            if ((*ids)[i] < 0 || (*ids)[i] >= *V) {
              add(w + "/topk_ids", "row " + std::to_string(cols ? i / cols : 0) + " holds id " + std::to_string((*ids)[i]) + ", expected 0 <= id < vocab_size " + std::to_string(*V));
              break;
            }
          }
        }
      }
      uint64_t vr = 0, vc = 0;
      if (matrix<float>(lg, L::kTopkValues, "[R, k]", &vr, &vc) && R && (vr != *R || vc != cols)) {
        add(w + "/topk_values", "shape (" + std::to_string(vr) + ", " + std::to_string(vc) + "), expected (" + std::to_string(*R) + ", " + std::to_string(cols) + ") like topk_ids");
      }
      if (const auto lse = vector<double>(lg, L::kLogsumexp, "[R]"); lse && R && lse->size() != *R) add(w + "/logsumexp", std::to_string(lse->size()) + " rows, expected " + std::to_string(*R));
      if (const auto cs = vector<uint64_t>(lg, L::kChecksum, "[R]"); cs && R && cs->size() != *R) add(w + "/checksum", std::to_string(cs->size()) + " rows, expected " + std::to_string(*R));
    } else if (storage) {
      add(attr_where(w, L::kStorage), "is \"" + *storage + "\", expected \"full\" or \"topk\"");
    }
    const auto off = lg.has(L::kRowOffsets) ? offsets(lg, L::kRowOffsets, S, R, data_name)
                                            : (add(w + "/row_offsets", "missing, expected int64 [S+1]"), std::nullopt);
    if (draft && R) {
      if (const auto nodes = vector<int32_t>(lg, L::kRowNodes, "[R]"); nodes && nodes->size() != *R) {
        add(w + "/row_nodes", std::to_string(nodes->size()) + " entries, expected " + std::to_string(*R) + " (one per row)");
      }
    }
    if (!draft && off && drafts.has_value() == g.has(L::kDraftTokens)) {
      for (std::size_t s = 0; s + 1 < off->size(); ++s) {
        const int64_t rows = (*off)[s + 1] - (*off)[s];
        const int64_t want = 1 + (drafts ? static_cast<int64_t>((*drafts)[s].size()) : 0);
        if (rows != want && (drafts || !g.has(L::kDraftTokens))) {
          add(w + "/row_offsets", "step " + std::to_string(s) + " has " + std::to_string(rows) + " rows, expected " + std::to_string(want) + " (1 + the step's draft nodes)");
          break;
        }
      }
    }
  }

  // Optional 1.2 diagnostics: shape checks here; their invariants via read_trace below.
  if (g.has(L::kTargetLayers)) {
    const std::string w = "/steps/target_layers";
    if (!g.has_group(L::kTargetLayers)) {
      add(w, "is not a group");
    } else {
      const h5::Group tg = g.open_group(L::kTargetLayers);
      const auto nl = int64_attr(tg, L::kNumLayers), hs = int64_attr(tg, L::kHiddenSize);
      const auto sub = string_attr(tg, L::kSubsteps);
      if (nl && *nl < 1) add(attr_where(w, L::kNumLayers), "is " + std::to_string(*nl) + ", expected >= 1");
      if (hs && *hs < 1) add(attr_where(w, L::kHiddenSize), "is " + std::to_string(*hs) + ", expected >= 1");
      std::size_t U = 0;
      if (sub) {
        const auto names = split_substeps(*sub);
        U = names.size();
        for (const auto& n : names) {
          const auto& known = layer_substep_names();
          if (std::find(known.begin(), known.end(), n) == known.end()) add(attr_where(w, L::kSubsteps), "names unknown sub-step '" + n + "', expected a comma-separated list from " + join_substeps(known));
        }
      }
      const auto nodes = vector<int32_t>(tg, L::kRowNodes, "[R]");
      if (tg.has(L::kRowOffsets) || true) offsets(tg, L::kRowOffsets, S, nodes ? std::optional<uint64_t>(nodes->size()) : std::nullopt, L::kRowNodes);
      if (const auto ds = dataset(tg, L::kHidden, Dtype::float32, 2, "[R*L*U, H]")) {
        const auto shape = ds->shape();
        if (hs && shape[1] != static_cast<uint64_t>(*hs)) add(w + "/hidden", shape_text(shape) + ", expected (R*L*U, " + std::to_string(*hs) + ") matching @hidden_size");
        if (nodes && nl && U && shape[0] != nodes->size() * static_cast<uint64_t>(*nl) * U) {
          add(w + "/hidden", shape_text(shape) + ", expected " + std::to_string(nodes->size() * static_cast<uint64_t>(*nl) * U) + " rows (R x num_layers x substeps)");
        }
      }
    }
  }
  if (g.has(L::kDrafterIO)) {
    const std::string w = "/steps/drafter_io";
    if (!g.has_group(L::kDrafterIO)) {
      add(w, "is not a group");
    } else {
      const h5::Group dg = g.open_group(L::kDrafterIO);
      const auto tokens = vector<int32_t>(dg, L::kTokens, "[N]");
      const std::optional<uint64_t> N = tokens ? std::optional<uint64_t>(tokens->size()) : std::nullopt;
      if (tokens) token_range(w + "/tokens", *tokens, vocab_);
      if (const auto p = vector<int64_t>(dg, L::kPositionsIO, "[N]"); p && N && p->size() != *N) add(w + "/positions", std::to_string(p->size()) + " entries, expected " + std::to_string(*N) + " (one per token)");
      if (const auto c = vector<int32_t>(dg, L::kCalls, "[N]"); c && N && c->size() != *N) add(w + "/calls", std::to_string(c->size()) + " entries, expected " + std::to_string(*N) + " (one per token)");
      offsets(dg, L::kRowOffsets, S, N, L::kTokens);
      for (const char* m : {L::kFeatures, L::kHidden, L::kLogitsIO}) {
        if (!dg.has(m)) continue;
        if (const auto ds = dataset(dg, m, Dtype::float32, 2, "[N, width]"); ds && N && ds->shape()[0] != *N) {
          add(w + "/" + m, shape_text(ds->shape()) + ", expected " + std::to_string(*N) + " rows (one per token)");
        }
      }
    }
  }
}

void Checker::check_stop_reason(const std::string& stop, const std::vector<int32_t>& output) {
  const std::string w = "/output/stop_reason";
  const std::string is = "is \"" + stop + "\", but ";
  const auto n = static_cast<int64_t>(output.size());
  auto eos = [&](int32_t id) { return eos_ids_ && std::find(eos_ids_->begin(), eos_ids_->end(), id) != eos_ids_->end(); };
  std::string eos_text;  // "eos_token_id 1" or "eos_token_id [1, 2]"
  if (eos_ids_) {
    for (std::size_t i = 0; i < eos_ids_->size(); ++i) eos_text += (i ? ", " : "") + std::to_string((*eos_ids_)[i]);
    eos_text = "the target's eos_token_id " + (eos_ids_->size() == 1 ? eos_text : "[" + eos_text + "]");
  }
  if (max_new_tokens_ && n > *max_new_tokens_) {
    add(w, is + "the output has " + std::to_string(n) + " tokens, more than max_new_tokens " + std::to_string(*max_new_tokens_) +
               " of /meta/config_json (a run stops when it has generated max_new_tokens)");
    return;
  }
  // With stop_at_eos a run ends at its first eos: one before the last token means it went on.
  if (stop_at_eos_.value_or(false)) {
    for (int64_t i = 0; i + 1 < n; ++i) {
      if (eos(output[static_cast<std::size_t>(i)])) {
        add(w, is + "output token " + std::to_string(i) + " (id " + std::to_string(output[static_cast<std::size_t>(i)]) + ") is " + eos_text +
                   " and stop_at_eos is true, yet " + std::to_string(n - 1 - i) + " more tokens follow (a run stops at its first eos)");
        return;
      }
    }
  }
  if (stop == "eos") {
    if (stop_at_eos_ && !*stop_at_eos_) {
      add(w, is + "/meta/config_json stop_at_eos is false (the run does not stop at eos), expected \"max_tokens\"");
    } else if (n == 0) {
      add(w, is + "the output is empty, expected its last token to be the target's eos token");
    } else if (eos_ids_ && !eos(output.back())) {
      add(w, is + "the last output token (id " + std::to_string(output.back()) + ") is not " + eos_text +
                 (eos_ids_->empty() ? " (null: no eos token)" : "") + ", expected \"max_tokens\" or an output ending in eos");
    }
  } else {  // max_tokens
    if (max_new_tokens_ && n < *max_new_tokens_) {
      add(w, is + "the output has " + std::to_string(n) + " tokens, fewer than max_new_tokens " + std::to_string(*max_new_tokens_) +
                 " of /meta/config_json (a run stops at max_tokens only when it has generated max_new_tokens)");
    } else if (stop_at_eos_.value_or(false) && n > 0 && eos(output.back())) {
      add(w, is + "the last output token (id " + std::to_string(output.back()) + ") is " + eos_text +
                 " and stop_at_eos is true, expected \"eos\"");
    }
  }
}

void Checker::check_draft_sources(const h5::Group& g, std::optional<long> S, const std::optional<std::vector<int64_t>>& positions,
                                  const std::optional<std::vector<std::vector<int32_t>>>& drafts) {
  const std::string w = std::string("/steps/") + L::kDraftSources;
  if (!g.has_group(L::kDraftSources)) {
    add(w, "is not a group, expected the draft-free drafter's sources (row_offsets, origin, position, match_length, request)");
    return;
  }
  if (!g.has(L::kDraftTokens)) add(w, "present without /steps/draft_tokens, expected sources only for drafted nodes");
  const h5::Group sg = g.open_group(L::kDraftSources);
  const auto origin = vector<uint8_t>(sg, L::kSourceOrigin, "[N]");
  const std::optional<uint64_t> N = origin ? std::optional<uint64_t>(origin->size()) : std::nullopt;
  const auto position = vector<int64_t>(sg, L::kSourcePosition, "[N]");
  const auto match_length = vector<int32_t>(sg, L::kSourceMatchLength, "[N]");
  const auto request = vector<int64_t>(sg, L::kSourceRequest, "[N]");
  bool lengths_ok = origin.has_value();
  auto same_length = [&](const char* name, std::optional<std::size_t> n) {
    if (!n) {
      lengths_ok = false;
    } else if (N && *n != *N) {
      add(w + "/" + name, std::to_string(*n) + " entries, expected " + std::to_string(*N) + " (one per entry of " + w + "/origin)");
      lengths_ok = false;
    }
  };
  same_length(L::kSourcePosition, position ? std::optional<std::size_t>(position->size()) : std::nullopt);
  same_length(L::kSourceMatchLength, match_length ? std::optional<std::size_t>(match_length->size()) : std::nullopt);
  same_length(L::kSourceRequest, request ? std::optional<std::size_t>(request->size()) : std::nullopt);
  const auto off = offsets(sg, L::kRowOffsets, S, N, L::kSourceOrigin);
  if (!off || !lengths_ok) return;
  int bad = 0;  // the first few problems of the entries are listed, then their count
  auto entry_problem = [&](const std::string& where, const std::string& what) {
    if (bad++ < 3) add(where, what);
  };
  for (std::size_t s = 0; s + 1 < off->size(); ++s) {
    const auto from = static_cast<std::size_t>((*off)[s]), to = static_cast<std::size_t>((*off)[s + 1]);
    const std::size_t nodes = drafts && s < drafts->size() ? (*drafts)[s].size() : 0;
    if (to > from && (drafts || !g.has(L::kDraftTokens)) && to - from != nodes) {
      entry_problem(w + "/row_offsets", "step " + std::to_string(s) + " has " + std::to_string(to - from) + " sources, expected 0 or " +
                                            std::to_string(nodes) + " (one per draft node of the step)");
    }
    for (std::size_t i = from; i < to; ++i) {
      const std::string at = "step " + std::to_string(s) + " node " + std::to_string(i - from);
      const uint8_t o = (*origin)[i];
      if (o > 1) {
        entry_problem(w + "/origin", at + " has origin " + std::to_string(o) + ", expected 0 (context) or 1 (responses)");
        continue;
      }
      if ((*match_length)[i] < 0) entry_problem(w + "/match_length", at + " has match length " + std::to_string((*match_length)[i]) + ", expected >= 0");
      const int64_t p = (*position)[i], r = (*request)[i];
      if (o == 0) {
        const bool known = positions && s < positions->size();
        if (p < -1 || (known && p >= (*positions)[s])) {
          entry_problem(w + "/position", at + " copies position " + std::to_string(p) + ", expected 0 <= position < " +
                                             (known ? std::to_string((*positions)[s]) : std::string("the step's position")) +
                                             " (inside the sequence the step drafted from) or -1 (unknown)");
        }
        if (r != -1) entry_problem(w + "/request", at + " has request " + std::to_string(r) + ", expected -1 for origin 0 (context: the sequence itself)");
      } else {
        if (p < -1) entry_problem(w + "/position", at + " copies position " + std::to_string(p) + " of a response, expected >= 0 or -1 (unknown)");
        if (r < 0) entry_problem(w + "/request", at + " has request " + std::to_string(r) + ", expected the earlier request's index (>= 0) for origin 1 (responses)");
      }
    }
  }
  if (bad > 3) add(w, std::to_string(bad - 3) + " more problems in the sources");
}

// The checks in this process; `read` (if given) receives the file as read by the last check. The
// readers run uncontained: check_here runs in a contained child first (check_and_read).
TraceCheckResult check_here(const std::filesystem::path& path, CheckedTraceFile* read = nullptr) {
  const std::string name = path.string();
  TraceCheckResult r;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    r.problems.push_back({"/", "cannot open: no such file"});
    return r;
  }
  if (!h5::File::is_hdf5(path)) {
    r.problems.push_back({"/", "not an HDF5 file (no HDF5 signature), expected an HDF5 trace"});
    return r;
  }
  std::optional<h5::File> f;
  try {
    f.emplace(h5::File::open_read_only(path));
  } catch (const std::exception& e) {
    std::string m = e.what();
    if (m.rfind(name + ": ", 0) == 0) m = m.substr(name.size() + 2);
    r.problems.push_back({"/", m + " (truncated or corrupt?), expected a readable HDF5 file"});
    return r;
  }
  r.opened = true;
  Checker c(name);
  try {
    c.run(*f);
  } catch (const std::exception& e) {  // an object the checks could not even open
    c.attempt("/", [&] { throw Error(e.what()); });
  }
  r.problems = std::move(c.result.problems);
  r.schema_version = c.result.schema_version;
  r.steps = c.result.steps;
  r.sequences = c.result.sequences;
  if (r.problems.empty()) {
    // The remaining invariants (trees, accepted paths, logits rows, 1.2 diagnostics) are the
    // reader's: a file passes check exactly when read_trace accepts it as well.
    try {
      if (r.sequences >= 0) {
        BatchedTrace b = trace_file::read_batched_trace_uncontained(path);
        if (read) read->batch = std::move(b);
      } else {
        Trace t = trace_file::read_trace_uncontained(path);
        if (read) read->trace = std::move(t);
      }
    } catch (const std::exception& e) {
      std::string m = e.what();
      if (m.rfind(name + ": ", 0) == 0) m = m.substr(name.size() + 2);
      std::string at = "/";
      const std::size_t colon = m.find(": ");
      // A batch invariant is placed where it breaks: a sequence's group, or the schedule.
      const std::string batch_prefix = "invalid batched trace: ", sequence_prefix = batch_prefix + "sequence ";
      if (!m.empty() && m[0] == '/' && colon != std::string::npos) {
        at = m.substr(0, colon);
        m = m.substr(colon + 2);
      } else if (m.rfind(sequence_prefix, 0) == 0) {  // "... sequence 3: <what>"
        const std::size_t id = sequence_prefix.size(), end = m.find(": ", id);
        at = std::string("/") + L::kSequences + "/" + m.substr(id, end - id);
        if (end != std::string::npos) m = m.substr(end + 2);
      } else if (m.rfind(batch_prefix + "schedule", 0) == 0) {
        at = std::string("/") + L::kBatch + "/" + L::kSchedule;
        m = m.substr(batch_prefix.size());
      }
      r.problems.push_back({at, m});
    }
  }
  return r;
}

TraceCheckResult check_and_read(const std::filesystem::path& path, CheckedTraceFile* read) {
  try {
    // A file that crashes or hangs libhdf5 must not take the checker down: try it in a child.
    contain_read(path, [&] { (void)check_here(path); });
  } catch (const std::exception& e) {
    TraceCheckResult r;
    r.opened = true;
    std::string m = e.what();
    const std::string name = path.string();
    if (m.rfind(name + ": ", 0) == 0) m = m.substr(name.size() + 2);
    r.problems.push_back({"/", "reading the file failed: " + m + ", expected a well-formed HDF5 file"});
    return r;
  }
  return check_here(path, read);
}

}  // namespace

TraceCheckResult check_trace_file(const std::filesystem::path& path) { return check_and_read(path, nullptr); }

namespace {

// The file's problems as one Error: the first (where and what) and how many more there are.
void refuse_problems(const std::filesystem::path& path, const TraceCheckResult& r) {
  if (r.problems.empty()) return;
  const std::string name = path.string();
  const TraceProblem& p = r.problems.front();
  std::string more;
  if (r.problems.size() > 1) {
    more = " (and " + std::to_string(r.problems.size() - 1) + " more problem" + (r.problems.size() == 2 ? "" : "s") +
           "; `specdec trace check " + name + "` lists them all)";
  }
  throw Error(name + ": " + (r.opened ? "not a valid trace: " : "") + p.where + ": " + p.what + more);
}

}  // namespace

CheckedTraceFile read_checked_trace_file(const std::filesystem::path& path) {
  CheckedTraceFile out;
  refuse_problems(path, check_and_read(path, &out));
  if (!out.trace && !out.batch) throw Error(path.string() + ": the trace passed its checks but was not read");
  return out;
}

Trace read_checked_trace(const std::filesystem::path& path) {
  CheckedTraceFile out;
  const TraceCheckResult r = check_and_read(path, &out);
  // A batched file is named as such before its problems, if any: it is the wrong kind of file.
  if (r.sequences >= 0 || r.schema_version.rfind(std::to_string(kBatchedTraceSchemaMajor) + ".", 0) == 0) {
    throw Error(trace_file::batched_where_one_expected(path.string(), r.schema_version));
  }
  refuse_problems(path, r);
  if (!out.trace) throw Error(path.string() + ": the trace passed its checks but was not read");
  return std::move(*out.trace);
}

}  // namespace specdec
