#include "experiments/sweep/results_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <map>
#include <sstream>

#include "experiments/sweep/cell_summary.hpp"
#include "experiments/sweep/dir_lock.hpp"
#include "reference/core/error.hpp"
#include "reference/io/atomic_file.hpp"
#include "reference/io/fingerprint.hpp"
#include "reference/io/input_file.hpp"
#include "reference/io/json_input.hpp"

namespace specdec::sweep {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kFormat = "specdec-sweep-results-1";

std::string text_hash(const std::string& text) {
  Fnv1a64 h;
  h.update(text.data(), text.size());
  return h.str();
}

// rows.jsonl is specdec's own output, read whole on resume and merge: bounded only so that a
// device or a runaway file is refused (kMaxSweepRuns rows of even large inline trees stay below).
constexpr uint64_t kMaxRowsFileBytes = uint64_t(64) << 30;

// Whether `v` is an integer in [0, limit) (a row's or manifest's numbers may have been edited).
bool index_below(const json& v, int64_t limit);

// Whether a row has the fields, of the types, that resuming, merging and the summaries read.
bool well_formed_row(const json& r) {
  const auto is = [&](const char* k, bool (json::*type)() const noexcept) { return r.contains(k) && (r[k].*type)(); };
  if (!is("run", &json::is_number_integer) || !is("cell", &json::is_number_integer) || !is("prompt_id", &json::is_string) ||
      !is("label", &json::is_string) || !is("category", &json::is_string)) {
    return false;
  }
  if (r.contains("depth_attempts") || r.contains("depth_accepts")) {
    if (!is("depth_attempts", &json::is_array) || !is("depth_accepts", &json::is_array) ||
        r["depth_attempts"].size() != r["depth_accepts"].size()) {
      return false;
    }
    for (const char* k : {"depth_attempts", "depth_accepts"})
      for (const json& v : r[k])
        if (!v.is_number_integer()) return false;
  }
  const json::json_pointer batch("/timing/batch");
  if (r.contains(batch)) {
    const json& b = r[batch];
    if (!b.is_object()) return false;
    for (const char* k : {"first_run", "generated_tokens", "requests", "wall_s"})
      if (!b.contains(k) || !b[k].is_number()) return false;
  }
  return true;
}

bool index_below(const json& v, int64_t limit) {
  return v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) && v.get<int64_t>() >= 0 &&
         v.get<int64_t>() < limit;
}

// Values of the summarized metrics of a row; absent ones (no prediction) are skipped.
const std::vector<std::pair<std::string, std::string>>& metrics() {
  static const std::vector<std::pair<std::string, std::string>> m = {
      {"acceptance_length", "/acceptance_length"},   {"tokens_per_target_forward", "/tokens_per_target_forward"},
      {"accepted_tokens", "/accepted_tokens"},       {"drafted_tokens", "/drafted_tokens"},
      {"tokens_per_s", "/timing/tokens_per_s"},      {"draft_ms", "/timing/draft_ms"},
      {"verify_ms", "/timing/verify_ms"},            {"predicted_speedup", "/predicted/speedup"}};
  return m;
}

// The draft depth and forward counts (the rows of every sweep since policies have them); their
// summary.csv columns appear only in sweeps with a policy other than fixed, so the files of other
// sweeps keep their columns.
const std::vector<std::pair<std::string, std::string>>& policy_metrics() {
  static const std::vector<std::pair<std::string, std::string>> m = {{"mean_draft_depth", "/mean_draft_depth"},
                                                                     {"target_forwards", "/target_forwards"},
                                                                     {"drafter_forwards", "/drafter_forwards"}};
  return m;
}

// The latencies of rows of batched cells (concurrency > 1); their summary.csv columns appear only
// in sweeps that have such cells, so the files of other sweeps keep their columns.
const std::vector<std::pair<std::string, std::string>>& batched_metrics() {
  static const std::vector<std::pair<std::string, std::string>> m = {
      {"ttft_s", "/timing/ttft_s"}, {"tpot_s", "/timing/tpot_s"}, {"queue_s", "/timing/queue_s"}};
  return m;
}

// Throughput of the batched runs `rows` came from: their generated tokens over their wall time
// (each batch counted once; a resumed cell may have run in two).
json batched_throughput(const std::vector<const json*>& rows) {
  std::map<int64_t, const json*> batches;  // by first run
  for (const json* r : rows) {
    const json::json_pointer ptr("/timing/batch");
    if (r->contains(ptr)) batches[(*r)[ptr]["first_run"].get<int64_t>()] = &(*r)[ptr];
  }
  if (batches.empty()) return nullptr;
  double tokens = 0, wall = 0, requests = 0;
  for (const auto& [_, b] : batches) {
    tokens += (*b)["generated_tokens"].get<double>();
    requests += (*b)["requests"].get<double>();
    wall += (*b)["wall_s"].get<double>();
  }
  return {{"batches", batches.size()},
          {"wall_s", wall},
          {"throughput_tok_s", wall > 0 ? tokens / wall : 0.0},
          {"throughput_req_s", wall > 0 ? requests / wall : 0.0}};
}

json summarize_group(const std::vector<const json*>& rows) {
  json out = json::object();
  out["prompts"] = rows.size();
  std::vector<std::pair<std::string, std::string>> all = metrics();
  all.insert(all.end(), policy_metrics().begin(), policy_metrics().end());
  all.insert(all.end(), batched_metrics().begin(), batched_metrics().end());
  for (const auto& [name, pointer] : all) {
    std::vector<double> v;
    const json::json_pointer ptr(pointer);
    for (const json* r : rows)
      if (r->contains(ptr) && (*r)[ptr].is_number()) v.push_back((*r)[ptr].get<double>());
    if (v.empty()) continue;
    out[name] = mean_ci_json(v);
  }
  // Pooled over prompts, as a table over many short runs wants it: emitted tokens over steps,
  // and per depth accepts over attempts.
  int64_t steps = 0, emitted = 0;
  std::vector<int64_t> attempts, accepts;
  for (const json* r : rows) {
    steps += r->value("steps", 0);
    emitted += r->value("emitted_in_steps", 0);
    if (!r->contains("depth_attempts")) continue;  // read_rows checked both arrays when present
    const auto& at = (*r)["depth_attempts"];
    const auto& ac = (*r)["depth_accepts"];
    for (size_t d = 0; d < at.size(); ++d) {
      if (attempts.size() <= d) attempts.resize(d + 1, 0), accepts.resize(d + 1, 0);
      attempts[d] += at[d].get<int64_t>();
      accepts[d] += ac[d].get<int64_t>();
    }
  }
  json by_depth = json::array();
  for (size_t d = 0; d < attempts.size(); ++d) by_depth.push_back(attempts[d] ? double(accepts[d]) / attempts[d] : 0.0);
  out["pooled"] = {{"steps", steps},
                   {"acceptance_length", steps ? double(emitted) / steps : 1.0},
                   {"acceptance_by_depth", by_depth},
                   {"depth_attempts", attempts}};
  return out;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

json make_manifest(const SweepSpec& spec, const Shard& shard) {
  json cells = json::array();
  for (const Cell& c : spec.cells) cells.push_back(c.to_json());
  json prompts = json::array();
  for (const Prompt& p : spec.prompts) {
    prompts.push_back({{"set", p.set}, {"id", p.id}, {"category", p.category}, {"text_fnv1a64", text_hash(p.text)}});
  }
  return {{"format", kFormat}, {"spec", spec.json}, {"cells", cells}, {"prompts", prompts},
          {"runs", spec.run_count()}, {"shard", shard.text()}};
}

json read_manifest(const fs::path& dir) {
  const fs::path p = dir / "manifest.json";
  if (!fs::exists(p)) throw Error(dir.string() + " holds no sweep results (no manifest.json)");
  json j;
  try {
    j = read_json_file(p.string(), "sweep manifest");  // a regular file, nesting bounded
  } catch (const Error& e) {
    throw Error(p.string() + " is not a sweep manifest (" + e.what() + ")");
  }
  const std::string bad = p.string() + " is not a sweep manifest (format " + kFormat + ")";
  if (!j.is_object() || !j.contains("format") || j["format"] != kFormat) throw Error(bad);
  // What the resume and merge code reads from it: a shard, the prompts by id, the cells, the run count.
  const auto field = [&](const char* name, bool ok) {
    if (!ok) throw Error(p.string() + ": field \"" + name + "\" is missing or malformed; the file was changed by something else than specdec sweep");
  };
  field("shard", j.contains("shard") && j["shard"].is_string());
  field("prompts", j.contains("prompts") && j["prompts"].is_array() && !j["prompts"].empty());
  for (const json& pr : j["prompts"]) field("prompts", pr.is_object() && pr.contains("id") && pr["id"].is_string());
  field("cells", j.contains("cells") && j["cells"].is_array() && !j["cells"].empty());
  for (const json& c : j["cells"]) field("cells", c.is_object() && (!c.contains("concurrency") || c["concurrency"].is_number_integer()));
  const int64_t runs = static_cast<int64_t>(j["cells"].size() * j["prompts"].size());
  field("runs", j.contains("runs") && index_below(j["runs"], runs + 1) && j["runs"].get<int64_t>() == runs);
  try {
    parse_shard(j["shard"].get<std::string>());
  } catch (const Error&) {
    field("shard", false);
  }
  return j;
}

namespace {

void refuse_other_contents(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename() != kLockFileName) {  // the lock a sweep holds on it (dir_lock.hpp)
      throw Error(dir.string() + " is not empty and holds no sweep manifest; give a new --out directory");
    }
  }
}

}  // namespace

void check_results_dir(const fs::path& dir) {
  if (!fs::exists(dir)) return;
  if (!fs::is_directory(dir)) throw Error(dir.string() + " exists and is not a directory");
  // A sweep creates the lock file before anything else: a directory with one is (being) a results
  // directory, checked again under the lock.
  if (fs::exists(dir / "manifest.json") || fs::exists(lock_file_path(dir))) return;
  refuse_other_contents(dir);
}

void open_results_dir(const fs::path& dir, const json& manifest) {
  if (fs::exists(dir / "manifest.json")) {
    const json old = read_manifest(dir);
    if (old == manifest) return;
    std::string diff;
    const auto add = [&](const std::string& what) { diff += (diff.empty() ? "" : ", ") + what; };
    for (const auto& [k, v] : manifest["spec"].items())
      if (!old["spec"].contains(k) || old["spec"][k] != v) add("spec field '" + k + "'");
    for (const auto& [k, v] : old["spec"].items())
      if (!manifest["spec"].contains(k)) add("spec field '" + k + "' (removed)");
    if (old["prompts"] != manifest["prompts"]) add("the prompts (ids or texts)");
    if (old["cells"] != manifest["cells"] && diff.empty()) add("the cells the grid expands to");
    if (old["shard"] != manifest["shard"]) add("the shard (" + old["shard"].get<std::string>() + " then, " + manifest["shard"].get<std::string>() + " now)");
    if (diff.empty()) add("the manifest");
    throw Error(dir.string() + " holds results of a different sweep: " + diff +
                " changed since they were started. Resume with the spec they were started with, or give a new --out directory");
  }
  if (fs::exists(dir) && !fs::is_directory(dir)) throw Error(dir.string() + " exists and is not a directory");
  if (fs::exists(dir)) {
    remove_stale_temporaries(dir / "manifest.json");  // of a writer killed while it wrote the manifest
    refuse_other_contents(dir);
  }
  fs::create_directories(dir);
  write_file_atomically(dir / "manifest.json", manifest.dump(2) + "\n");
}

std::vector<json> read_rows(const fs::path& dir, bool repair) {
  const fs::path p = dir / "rows.jsonl";
  std::vector<json> rows;
  if (!fs::exists(p)) return rows;
  const std::string text = read_input_file(p.string(), "sweep rows file", kMaxRowsFileBytes);
  size_t start = 0;
  int line = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) {  // torn last line: the run it held is redone
      if (repair) fs::resize_file(p, start);
      break;
    }
    ++line;
    const std::string where = p.string() + ":" + std::to_string(line);
    const std::string bad = where + ": not a result row; the file was changed by something else than specdec sweep";
    json j;
    try {
      j = parse_json(std::string_view(text).substr(start, end - start), where);  // nesting bounded
    } catch (const Error& e) {
      throw Error(bad + " (" + e.what() + ")");
    }
    if (!j.is_object() || !well_formed_row(j) || !index_below(j["run"], INT64_MAX)) throw Error(bad);
    rows.push_back(j);
    start = end + 1;
  }
  return rows;
}

RowWriter::RowWriter(const fs::path& dir) : path_(dir / "rows.jsonl") {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(path_.string() + " cannot be opened for appending: " + std::strerror(errno));
}

RowWriter::~RowWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void RowWriter::append(const json& row) {
  const std::string line = row.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(path_.string() + ": appending a row failed: " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd_) != 0) throw Error(path_.string() + ": fsync failed: " + std::strerror(errno));
}

json write_summary(const fs::path& dir, const json& manifest, const std::vector<json>& rows) {
  // Groups: each cell over all its prompts, and over the prompts of each category.
  std::map<std::pair<int64_t, std::string>, std::vector<const json*>> groups;
  for (const json& r : rows) {
    groups[{r["cell"].get<int64_t>(), "all"}].push_back(&r);
    groups[{r["cell"].get<int64_t>(), r["category"].get<std::string>()}].push_back(&r);
  }
  json cells = json::array();
  for (const auto& [key, members] : groups) {
    json g = summarize_group(members);
    g["cell"] = key.first;
    g["category"] = key.second;
    g["config"] = manifest["cells"][key.first];
    g["label"] = (*members.front())["label"];
    // A batch holds every category of its cell: its throughput is the cell's, not a category's.
    if (key.second == "all") {
      const json t = batched_throughput(members);
      if (!t.is_null()) g["batched"] = t;
    }
    cells.push_back(g);
  }
  json summary = {{"format", "specdec-sweep-summary-1"},
                  {"runs", rows.size()},
                  {"statistics", interval_description()},
                  {"groups", cells}};
  // The per-prompt best fixed K, where the grid has a fixed-K axis (cell_summary.hpp).
  const json oracle = fixed_k_oracle(manifest["cells"], rows);
  if (!oracle.empty()) summary["oracle"] = oracle;
  write_file_atomically(dir / "summary.json", summary.dump(2) + "\n");

  bool batched = false;
  for (const json& r : rows) batched = batched || r.contains(json::json_pointer("/timing/batch"));
  bool policies = false;
  for (const json& c : manifest["cells"]) policies = policies || c.contains("policy");
  std::vector<std::pair<std::string, std::string>> columns = metrics();
  if (policies) columns.insert(columns.end(), policy_metrics().begin(), policy_metrics().end());
  if (batched) columns.insert(columns.end(), batched_metrics().begin(), batched_metrics().end());
  std::ostringstream csv;
  csv << "cell,label,category,prompts,pooled_acceptance_length";
  for (const auto& [name, _] : columns) csv << "," << name << "_mean," << name << "_sd," << name << "_ci95_low," << name << "_ci95_high";
  if (batched) csv << ",throughput_tok_s,throughput_req_s";
  csv << "\n";
  for (const json& g : cells) {
    csv << g["cell"].get<int64_t>() << "," << csv_field(g["label"].get<std::string>()) << "," << csv_field(g["category"].get<std::string>())
        << "," << g["prompts"].get<int64_t>() << "," << g["pooled"]["acceptance_length"].get<double>();
    for (const auto& [name, _] : columns) {
      if (!g.contains(name)) {
        csv << ",,,,";
        continue;
      }
      // No sd or interval below two prompts: empty fields, not zeros.
      const json& m = g[name];
      csv << "," << m["mean"].get<double>() << ",";
      if (!m["sd"].is_null()) csv << m["sd"].get<double>();
      csv << ",";
      if (!m["ci95"].is_null()) csv << m["ci95"][0].get<double>() << "," << m["ci95"][1].get<double>();
      else csv << ",";
    }
    if (batched) {
      if (g.contains("batched")) csv << "," << g["batched"]["throughput_tok_s"].get<double>() << "," << g["batched"]["throughput_req_s"].get<double>();
      else csv << ",,";
    }
    csv << "\n";
  }
  write_file_atomically(dir / "summary.csv", csv.str());
  return summary;
}

std::string small_sample_warning(const json& summary) {
  int64_t few = 0, smallest = -1, groups = 0;
  for (const json& g : summary["groups"]) {
    const int64_t n = g["prompts"].get<int64_t>();
    ++groups;
    if (n >= kFewPrompts) continue;
    ++few;
    smallest = smallest < 0 ? n : std::min(smallest, n);
  }
  if (few == 0) return "";
  return std::to_string(few) + " of " + std::to_string(groups) + " summary groups have fewer than " + std::to_string(kFewPrompts) +
         " prompts (smallest: " + std::to_string(smallest) + "): " +
         (smallest < 2 ? "groups of one prompt get no interval, and " : "") +
         "intervals of 2-4 prompts cover less than 95%; add prompts (\"per_category\") for intervals to rely on";
}

json deterministic_part(const json& row) {
  json r = row;
  r.erase("timing");
  return r;
}

}  // namespace specdec::sweep
