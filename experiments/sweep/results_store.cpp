#include "experiments/sweep/results_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "experiments/sweep/cell_summary.hpp"
#include "reference/core/error.hpp"
#include "reference/io/atomic_file.hpp"
#include "reference/io/fingerprint.hpp"

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

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw Error(p.string() + " cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
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
    const MeanCI m = mean_ci(v);
    out[name] = {{"n", m.n}, {"mean", m.mean}, {"sd", m.sd}, {"ci95", {m.ci_low, m.ci_high}}};
  }
  // Pooled over prompts, as a table over many short runs wants it: emitted tokens over steps,
  // and per depth accepts over attempts.
  int64_t steps = 0, emitted = 0;
  std::vector<int64_t> attempts, accepts;
  for (const json* r : rows) {
    steps += r->value("steps", 0);
    emitted += r->value("emitted_in_steps", 0);
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
  const auto j = json::parse(read_file(p), nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != kFormat) {
    throw Error(p.string() + " is not a sweep manifest (format " + kFormat + ")");
  }
  return j;
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
  if (fs::exists(dir) && !fs::is_empty(dir)) throw Error(dir.string() + " is not empty and holds no sweep manifest; give a new --out directory");
  fs::create_directories(dir);
  write_file_atomically(dir / "manifest.json", manifest.dump(2) + "\n");
}

std::vector<json> read_rows(const fs::path& dir, bool repair) {
  const fs::path p = dir / "rows.jsonl";
  std::vector<json> rows;
  if (!fs::exists(p)) return rows;
  const std::string text = read_file(p);
  size_t start = 0;
  int line = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) {  // torn last line: the run it held is redone
      if (repair) fs::resize_file(p, start);
      break;
    }
    ++line;
    const auto j = json::parse(text.substr(start, end - start), nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("run")) {
      throw Error(p.string() + ":" + std::to_string(line) + ": not a result row; the file was changed by something else than specdec sweep");
    }
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

void write_summary(const fs::path& dir, const json& manifest, const std::vector<json>& rows) {
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
  json summary = {{"format", "specdec-sweep-summary-1"}, {"runs", rows.size()}, {"groups", cells}};
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
      const json& m = g[name];
      csv << "," << m["mean"].get<double>() << "," << m["sd"].get<double>() << "," << m["ci95"][0].get<double>() << ","
          << m["ci95"][1].get<double>();
    }
    if (batched) {
      if (g.contains("batched")) csv << "," << g["batched"]["throughput_tok_s"].get<double>() << "," << g["batched"]["throughput_req_s"].get<double>();
      else csv << ",,";
    }
    csv << "\n";
  }
  write_file_atomically(dir / "summary.csv", csv.str());
}

json deterministic_part(const json& row) {
  json r = row;
  r.erase("timing");
  return r;
}

}  // namespace specdec::sweep
