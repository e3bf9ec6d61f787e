// specdec sweep end to end on the bundled models: rows and summaries, resume after SIGKILL and
// after a torn last line, shards and merge against a one-process run, refusal of a changed spec,
// question files, the simulator's prediction, and the plot scripts on the results.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "experiments/sweep/results_store.hpp"
#include "tests/cli/cli_runner.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::CliRun;
using testing::run;

const std::string kModels = std::string(SPECDEC_SOURCE_DIR) + "/models";

// Short prompts in two categories, so that the runs are quick (the bundled held-out prompts are
// 150 tokens long).
const std::string kQuestions =
    R"({"question_id": "p1", "category": "prose", "turns": ["And God said, Let there be"]})" "\n"
    R"({"question_id": "c1", "category": "code", "turns": ["def main():\n    "]})" "\n"
    R"({"question_id": "p2", "category": "prose", "turns": ["In the beginning"]})" "\n"
    R"({"question_id": "c2", "category": "code", "turns": ["import os\nimport"]})" "\n";

// Five cells (sequential, EAGLE-1 chains, a sampled draft-LM chain, an EAGLE-3 dynamic tree) on
// one prompt of each category: ten runs of eight tokens.
json small_spec(const std::string& questions) {
  return {{"model", kModels + "/target"},
          {"drafters", {{"draft", kModels + "/draft"}, {"eagle", kModels + "/eagle1"}, {"eagle3", kModels + "/eagle3"}}},
          {"prompts", {{"file", questions}, {"per_category", 1}}},
          {"max_new_tokens", 8},
          {"grid", json::parse(R"([{"method": "sequential"}, {"method": "eagle", "k": [1, 3]},
                                   {"method": "draft", "k": 2, "sampling": "sample", "temperature": 0.8, "seed": "prompt"},
                                   {"method": "eagle3", "tree": "dynamic", "depth": 2, "tree_top_k": 2, "total_tokens": 5}])")}};
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

std::vector<json> deterministic_rows(const fs::path& dir) {
  std::vector<json> out;
  for (const json& r : sweep::read_rows(dir, false)) out.push_back(sweep::deterministic_part(r));
  return out;
}

std::string rows_text(const fs::path& dir) {
  std::ifstream in(dir / "rows.jsonl", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class SweepCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("specdec_sweep_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write(questions(), kQuestions);
    write(spec_path(), small_spec(questions()).dump(2));
    const CliRun r = run({"sweep", spec_path(), "--out", ref().string()});
    ASSERT_EQ(r.code, 0) << r.err;
    ref_log_ = r.out + r.err;
    reference_ = deterministic_rows(ref());
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string spec_path() { return (dir_ / "spec.json").string(); }
  static std::string questions() { return (dir_ / "questions.jsonl").string(); }
  static fs::path ref() { return dir_ / "ref"; }
  static fs::path dir_;
  static std::vector<json> reference_;
  static std::string ref_log_;  // what the reference sweep printed
};
fs::path SweepCommand::dir_;
std::vector<json> SweepCommand::reference_;
std::string SweepCommand::ref_log_;

TEST_F(SweepCommand, RowsAndSummaryOfOneRun) {
  ASSERT_EQ(reference_.size(), 10u);
  const std::vector<json> rows = sweep::read_rows(ref(), false);
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& r = rows[i];
    EXPECT_EQ(r["run"], i) << "rows in run order";
    EXPECT_EQ(r["generated_tokens"], 8) << r["label"];
    for (const char* f : {"acceptance_length", "acceptance_by_depth", "tokens_per_target_forward", "drafted_tokens",
                          "accepted_tokens", "category", "prompt_id", "method", "sampling"})
      EXPECT_TRUE(r.contains(f)) << f << " missing in row " << i;
    for (const char* f : {"draft_ms", "verify_ms", "tokens_per_s", "repeats"}) EXPECT_TRUE(r["timing"].contains(f)) << f;
  }
  // Sequential: one token per decode step, AL 1; steps are the forwards after the prefill.
  EXPECT_EQ(rows[0]["method"], "sequential");
  EXPECT_EQ(rows[0]["acceptance_length"], 1.0);
  EXPECT_EQ(rows[0]["steps"], rows[0]["target_forwards"].get<int>() - 1);
  // Greedy EAGLE reproduces sequential greedy decoding token for token, on both prompts.
  for (int run = 2; run < 6; ++run) {
    EXPECT_EQ(rows[run]["output_fnv1a64"], rows[run % 2]["output_fnv1a64"]) << rows[run]["label"] << " " << rows[run]["prompt_id"];
    EXPECT_GE(rows[run]["acceptance_length"].get<double>(), 1.0);
  }
  EXPECT_EQ(rows[1]["category"], "code");
  EXPECT_EQ(rows[1]["prompt_id"], "c1");
  EXPECT_EQ(rows[6]["seed_used"], 0) << "seed \"prompt\": the prompt's index in its category";
  const json summary = json::parse(std::ifstream(ref() / "summary.json"));
  ASSERT_EQ(summary["groups"].size(), 15u) << "each of 5 cells over all prompts and per category";
  const json& g = summary["groups"][0];
  EXPECT_EQ(g["category"], "all");
  EXPECT_EQ(g["prompts"], 2);
  EXPECT_EQ(g["acceptance_length"]["n"], 2);
  EXPECT_TRUE(g["acceptance_length"]["ci95"].is_array()) << g.dump();
  EXPECT_EQ(g["acceptance_length"]["few"], true) << "two prompts: flagged";
  // One prompt per category: no sd and no interval, and the sweep says so.
  const json& prose = summary["groups"][1];
  EXPECT_EQ(prose["prompts"], 1);
  EXPECT_TRUE(prose["acceptance_length"]["sd"].is_null()) << prose.dump();
  EXPECT_TRUE(prose["acceptance_length"]["ci95"].is_null()) << prose.dump();
  EXPECT_EQ(summary["statistics"]["interval"], "95% percentile bootstrap of the mean over prompts");
  EXPECT_NE(ref_log_.find("warning: 15 of 15 summary groups have fewer than 5 prompts (smallest: 1)"), std::string::npos) << ref_log_;
  EXPECT_TRUE(fs::exists(ref() / "summary.csv"));
  // The CSV leaves a missing sd and interval empty rather than writing zeros.
  std::stringstream csv;
  csv << std::ifstream(ref() / "summary.csv").rdbuf();
  std::string header, all, first_category;
  std::getline(csv, header);
  std::getline(csv, all);
  std::getline(csv, first_category);
  EXPECT_NE(first_category.find(",,,"), std::string::npos) << first_category;
}

TEST_F(SweepCommand, CompleteResultsAreNotRunAgain) {
  const std::string before = rows_text(ref());
  const CliRun r = run({"sweep", spec_path(), "--out", ref().string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("0 runs to do, 10 already done"), std::string::npos) << r.out;
  EXPECT_EQ(rows_text(ref()), before);
}

TEST_F(SweepCommand, ResumesAfterSigkillWithIdenticalResults) {
  // A larger sweep, so that it is still running when killed: the same cells on four prompts,
  // two timed repeats each.
  json spec = small_spec(questions());
  spec["prompts"]["per_category"] = 2;
  spec["repeats"] = 2;
  write(dir_ / "big.json", spec.dump());
  const fs::path killed = dir_ / "killed", whole = dir_ / "whole";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    freopen("/dev/null", "w", stdout);
    execl(SPECDEC_BINARY, SPECDEC_BINARY, "sweep", (dir_ / "big.json").c_str(), "--out", killed.c_str(), (char*)nullptr);
    _exit(127);
  }
  // Kill it as soon as two rows are in (polling; the assertions below do not depend on when).
  size_t seen = 0;
  for (int i = 0; i < 600000 && seen < 2; ++i) {
    seen = fs::exists(killed / "rows.jsonl") ? sweep::read_rows(killed, false).size() : 0;
    if (seen < 2) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the sweep ended before it was killed; make it larger";
  const std::vector<json> after_kill = sweep::read_rows(killed, false);
  EXPECT_GE(after_kill.size(), seen) << "no finished row is lost";
  EXPECT_LT(after_kill.size(), 20u);
  const CliRun resumed = run({"sweep", (dir_ / "big.json").string(), "--out", killed.string()});
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find(std::to_string(after_kill.size()) + " already done"), std::string::npos) << resumed.out;
  const CliRun once = run({"sweep", (dir_ / "big.json").string(), "--out", whole.string()});
  ASSERT_EQ(once.code, 0) << once.err;
  EXPECT_EQ(deterministic_rows(killed), deterministic_rows(whole));
  EXPECT_EQ(deterministic_rows(killed).size(), 20u);
}

TEST_F(SweepCommand, TornLastLineIsRedone) {
  const fs::path torn = dir_ / "torn";
  fs::create_directories(torn);
  fs::copy_file(ref() / "manifest.json", torn / "manifest.json");
  const std::string rows = rows_text(ref());
  size_t cut = 0;
  for (int i = 0; i < 3; ++i) cut = rows.find('\n', cut) + 1;
  write(torn / "rows.jsonl", rows.substr(0, cut + 40));  // three rows and the start of a fourth
  const CliRun r = run({"sweep", spec_path(), "--out", torn.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("7 runs to do, 3 already done"), std::string::npos) << r.out;
  EXPECT_EQ(deterministic_rows(torn), reference_);
}

TEST_F(SweepCommand, ShardsMergeIntoTheOneProcessResult) {
  std::vector<std::string> merge = {"sweep", "merge", "--out", (dir_ / "merged").string()};
  for (int i = 1; i <= 3; ++i) {
    const fs::path d = dir_ / ("shard" + std::to_string(i));
    const CliRun r = run({"sweep", spec_path(), "--out", d.string(), "--shard", std::to_string(i) + "/3"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(sweep::read_rows(d, false).size(), i == 1 ? 4u : 3u) << "shard " << i;
    merge.push_back(d.string());
  }
  // Incomplete, repeated or missing shards are refused.
  CliRun bad = run({"sweep", "merge", "--out", (dir_ / "m1").string(), (dir_ / "shard1").string(), (dir_ / "shard2").string()});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("shard 3/3 is missing"), std::string::npos) << bad.err;
  bad = run({"sweep", "merge", "--out", (dir_ / "m2").string(), (dir_ / "shard1").string(), (dir_ / "shard1").string()});
  EXPECT_NE(bad.err.find("is given twice"), std::string::npos) << bad.err;
  bad = run({"sweep", "merge", "--out", (dir_ / "m3").string(), (dir_ / "shard1").string(), ref().string()});
  EXPECT_NE(bad.err.find("has 3 shards"), std::string::npos) << bad.err;
  // A shard resumed with another shard number is a different sweep.
  bad = run({"sweep", spec_path(), "--out", (dir_ / "shard1").string(), "--shard", "2/3"});
  EXPECT_NE(bad.err.find("the shard (1/3 then, 2/3 now)"), std::string::npos) << bad.err;

  const CliRun m = run(merge);
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_EQ(deterministic_rows(dir_ / "merged"), reference_);
  const json a = json::parse(std::ifstream(dir_ / "merged" / "summary.json"));
  const json b = json::parse(std::ifstream(ref() / "summary.json"));
  ASSERT_EQ(a["groups"].size(), b["groups"].size());
  for (size_t i = 0; i < a["groups"].size(); ++i) {
    EXPECT_EQ(a["groups"][i]["pooled"], b["groups"][i]["pooled"]) << i;
    EXPECT_EQ(a["groups"][i]["acceptance_length"], b["groups"][i]["acceptance_length"]) << i;
  }
  EXPECT_EQ(sweep::read_manifest(dir_ / "merged"), sweep::read_manifest(ref())) << "a merge is the one-process sweep";
}

// A concurrency axis: a batched cell's rows hold the results of the same cell at concurrency 1
// (each request keeps sequence id 0), plus the request's latencies and the batch it ran in; the
// summary holds the batch's throughput; shards keep a batched cell whole and merge into the
// one-process result.
TEST_F(SweepCommand, ConcurrencyDecodesACellAsOneBatch) {
  json spec = small_spec(questions());
  spec["prompts"] = questions();  // all four prompts
  spec["grid"] = json::parse(R"([{"method": "eagle", "k": 3, "concurrency": [1, 3]},
      {"method": "draft", "k": 2, "sampling": "sample", "temperature": 0.8, "seed": "prompt", "concurrency": [1, 2]}])");
  const fs::path spec_file = dir_ / "batched.json";
  write(spec_file, spec.dump(2));
  const fs::path out = dir_ / "batched";
  const CliRun r = run({"sweep", spec_file.string(), "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<json> rows = sweep::read_rows(out, false);
  ASSERT_EQ(rows.size(), 16u);
  const auto results = [](json row) {  // what does not name the cell or time the run
    for (const char* k : {"run", "cell", "label", "concurrency", "timing"}) row.erase(k);
    return row;
  };
  for (int cell : {1, 3}) {
    for (int p = 0; p < 4; ++p) {
      const json& batched = rows[cell * 4 + p];
      const json& alone = rows[(cell - 1) * 4 + p];
      EXPECT_EQ(results(batched), results(alone)) << batched["label"] << " " << batched["prompt_id"];
      EXPECT_EQ(batched["concurrency"], cell == 1 ? 3 : 2);
      EXPECT_FALSE(alone.contains("concurrency")) << "rows at concurrency 1 keep their format";
      EXPECT_FALSE(alone["timing"].contains("ttft_s"));
      const json& t = batched["timing"];
      for (const char* k : {"ttft_s", "tpot_s", "queue_s", "tokens_per_s"}) EXPECT_TRUE(t.contains(k)) << k;
      EXPECT_EQ(t["batch"]["first_run"], cell * 4);
      EXPECT_EQ(t["batch"]["requests"], 4);
      EXPECT_EQ(t["batch"]["generated_tokens"], 32);
      EXPECT_GT(t["batch"]["throughput_tok_s"].get<double>(), 0);
    }
  }
  const json summary = json::parse(std::ifstream(out / "summary.json"));
  for (const json& g : summary["groups"]) {
    const bool batched = g["config"].contains("concurrency");
    EXPECT_EQ(g.contains("ttft_s"), batched) << g["label"] << " " << g["category"];
    EXPECT_EQ(g.contains("batched"), batched && g["category"] == "all") << g["label"] << " " << g["category"];
    if (g.contains("batched")) {
      EXPECT_EQ(g["batched"]["batches"], 1);
      EXPECT_GT(g["batched"]["throughput_tok_s"].get<double>(), 0);
      EXPECT_EQ(g["ttft_s"]["n"], 4);
    }
  }
  std::stringstream csv;
  csv << std::ifstream(out / "summary.csv").rdbuf();
  EXPECT_NE(csv.str().find(",ttft_s_mean,"), std::string::npos);
  EXPECT_NE(csv.str().find(",throughput_tok_s,throughput_req_s\n"), std::string::npos);
  std::stringstream plain;
  plain << std::ifstream(ref() / "summary.csv").rdbuf();
  EXPECT_EQ(plain.str().find("ttft_s"), std::string::npos) << "sweeps without batched cells keep their columns";

  // Two shards: each batched cell's four runs are in one of them; merged, the one-process rows.
  std::vector<std::string> merge = {"sweep", "merge", "--out", (dir_ / "batched-merged").string()};
  for (int i = 1; i <= 2; ++i) {
    const fs::path d = dir_ / ("batched-shard" + std::to_string(i));
    const CliRun s = run({"sweep", spec_file.string(), "--out", d.string(), "--shard", std::to_string(i) + "/2"});
    ASSERT_EQ(s.code, 0) << s.err;
    std::map<int, int> per_cell;
    for (const json& row : sweep::read_rows(d, false)) ++per_cell[row["cell"].get<int>()];
    for (int cell : {1, 3}) EXPECT_TRUE(per_cell[cell] == 0 || per_cell[cell] == 4) << "cell " << cell << " in shard " << i;
    merge.push_back(d.string());
  }
  const CliRun m = run(merge);
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_EQ(deterministic_rows(dir_ / "batched-merged"), deterministic_rows(out));
}

// A policy axis: two policies of an EAGLE-1 K=3 chain beside fixed K = 1..3, on two prompts.
// Rows carry the policy's label, the mean draft depth and its histogram; greedy decoding is lossless
// under every policy; a batched policy cell holds the rows of the unbatched one; the summary holds
// the mean draft depth per cell and the per-prompt oracle over K.
TEST_F(SweepCommand, PolicyAxisRowsAndOracle) {
  json spec = small_spec(questions());
  spec["grid"] = json::parse(R"([{"method": "eagle", "k": [1, 2, 3]},
      {"method": "eagle", "k": 3, "policy": ["hf-heuristic", {"policy": "p-min", "p_min": 0.5}]},
      {"method": "eagle", "k": 3, "policy": "hf-heuristic", "concurrency": 2}])");
  const fs::path spec_file = dir_ / "policies.json";
  write(spec_file, spec.dump(2));
  const fs::path out = dir_ / "policies";
  const CliRun r = run({"sweep", spec_file.string(), "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<json> rows = sweep::read_rows(out, false);
  ASSERT_EQ(rows.size(), 12u) << "6 cells on 2 prompts";
  const std::vector<std::string> policies = {"fixed", "fixed", "fixed", "hf-heuristic", "p-min,p_min=0.5", "hf-heuristic"};
  for (const json& row : rows) {
    const int cell = row["cell"].get<int>();
    EXPECT_EQ(row["policy"], policies[cell]) << row["label"];
    EXPECT_EQ(row["output_fnv1a64"], rows[row["run"].get<int>() % 2]["output_fnv1a64"]) << row["label"] << ": lossless";
    int steps = 0;
    for (const json& n : row["draft_depth_per_step"]) steps += n.get<int>();
    EXPECT_EQ(steps, row["steps"]) << row["label"];
    const double depth = row["mean_draft_depth"].get<double>();
    EXPECT_GE(depth, cell < 3 ? 0.5 : 0.0) << row["label"];
    EXPECT_LE(depth, cell < 3 ? cell + 1 : 3) << row["label"];
  }
  EXPECT_EQ(rows[0]["draft_depth_per_step"], json::array({0, rows[0]["steps"]})) << "K=1 fixed: every step one deep";
  EXPECT_EQ(rows[6]["label"], "eagle k=3 policy=hf-heuristic greedy");
  EXPECT_EQ(rows[8]["label"], "eagle k=3 policy=p-min,p_min=0.5 greedy");
  EXPECT_EQ(sweep::read_manifest(out)["cells"][4]["policy"], json::parse(R"({"policy": "p-min", "p_min": 0.5, "n_min": 0, "keep_low": 0})"))
      << sweep::read_manifest(out)["cells"][4].dump();
  const auto results = [](json row) {  // what does not name the cell or time the run
    for (const char* k : {"run", "cell", "label", "concurrency", "timing"}) row.erase(k);
    return row;
  };
  for (int p = 0; p < 2; ++p) EXPECT_EQ(results(rows[10 + p]), results(rows[6 + p])) << "batched hf-heuristic, prompt " << p;

  const json summary = json::parse(std::ifstream(out / "summary.json"));
  for (const json& g : summary["groups"]) {
    ASSERT_TRUE(g.contains("mean_draft_depth")) << g["label"];
    EXPECT_TRUE(g.contains("target_forwards")) << g["label"];
  }
  EXPECT_EQ(summary["groups"][0]["mean_draft_depth"]["mean"], 1.0);
  ASSERT_EQ(summary["oracle"].size(), 1u) << summary["oracle"].dump();
  const json& o = summary["oracle"][0];
  EXPECT_EQ(o["method"], "eagle");
  EXPECT_EQ(o["ks"], json::parse("[1, 2, 3]"));
  EXPECT_EQ(o["prompts"], 2);
  ASSERT_EQ(o["chosen"].size(), 2u);
  double best = 0;
  for (const json& row : rows)
    if (row["cell"].get<int>() < 3 && row["prompt_id"] == o["chosen"][0]["prompt_id"])
      best = std::max(best, row["timing"]["tokens_per_s"].get<double>());
  EXPECT_EQ(o["chosen"][0]["tokens_per_s"].get<double>(), best) << "the prompt's fastest fixed K";
  std::stringstream csv;
  csv << std::ifstream(out / "summary.csv").rdbuf();
  EXPECT_NE(csv.str().find(",mean_draft_depth_mean,"), std::string::npos);
  std::stringstream plain;
  plain << std::ifstream(ref() / "summary.csv").rdbuf();
  EXPECT_EQ(plain.str().find("mean_draft_depth"), std::string::npos) << "sweeps without policies keep their columns";

  // The table and figure script: the oracle row, each policy's distance from it, the figure.
  write(dir_ / "policies.md", "# Policies\n\nkept\n");
  const std::string cmd = std::string(SPECDEC_PYTHON) + " " + SPECDEC_SOURCE_DIR + "/analysis/plot_policies.py " + out.string() +
                          " --png-only --out " + (dir_ / "policies_fig").string() + " --doc " + (dir_ / "policies.md").string() +
                          " > /dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_GT(fs::file_size(dir_ / "policies_fig.png"), 1000u);
  std::stringstream doc;
  doc << std::ifstream(dir_ / "policies.md").rdbuf();
  EXPECT_EQ(doc.str().rfind("# Policies\n\nkept\n<!-- generated by analysis/plot_policies.py -->\n", 0), 0u) << doc.str();
  for (const char* x : {"| **oracle (best fixed K per prompt)** |", "| `hf-heuristic` |", "| `p-min,p_min=0.5` |", "### EAGLE-1",
                        "`specdec sweep` results in policies", "95% percentile-bootstrap interval"})
    EXPECT_NE(doc.str().find(x), std::string::npos) << x << " not in " << doc.str();

  // A results directory started before policies (rows without the new fields) resumes: its
  // manifest is what the spec gives now, and the summary is written over old and new rows.
  const fs::path old = dir_ / "old-format";
  fs::create_directories(old);
  fs::copy_file(ref() / "manifest.json", old / "manifest.json");
  std::string text;
  int kept = 0;
  for (json row : sweep::read_rows(ref(), false)) {
    if (++kept > 6) break;
    for (const char* k : {"policy", "mean_draft_depth", "draft_depth_per_step"}) row.erase(k);
    text += row.dump() + "\n";
  }
  write(old / "rows.jsonl", text);
  const CliRun resumed = run({"sweep", spec_path(), "--out", old.string()});
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("4 runs to do, 6 already done"), std::string::npos) << resumed.out;
  const json old_summary = json::parse(std::ifstream(old / "summary.json"));
  EXPECT_EQ(old_summary["groups"].size(), 15u);
  EXPECT_EQ(old_summary["oracle"][0]["ks"], json::parse("[1, 3]")) << "eagle K = 1, 3 of the small spec";
}

TEST_F(SweepCommand, ChangedSpecIsRefused) {
  json spec = small_spec(questions());
  spec["max_new_tokens"] = 6;
  write(dir_ / "changed.json", spec.dump());
  CliRun r = run({"sweep", (dir_ / "changed.json").string(), "--out", ref().string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("holds results of a different sweep: spec field 'max_new_tokens' changed"), std::string::npos) << r.err;
  // Other prompts are a change too.
  write(dir_ / "q.jsonl", R"({"question_id": 1, "category": "writing", "turns": ["Write a poem."]})" "\n");
  r = run({"sweep", spec_path(), "--out", ref().string(), "--prompts", (dir_ / "q.jsonl").string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("spec field 'prompts'"), std::string::npos) << r.err;
  // A directory that holds something else is not written into.
  fs::create_directories(dir_ / "other");
  write(dir_ / "other" / "notes.txt", "x");
  r = run({"sweep", spec_path(), "--out", (dir_ / "other").string()});
  EXPECT_NE(r.err.find("is not empty and holds no sweep manifest"), std::string::npos) << r.err;
}

TEST_F(SweepCommand, ChangedCheckpointIsRefused) {
  const fs::path model = dir_ / "tiny";
  ASSERT_EQ(run({"init-model", "--preset", "tiny", "--seed", "3", "--out", model.string()}).code, 0);
  write(dir_ / "tiny.json", json({{"model", model.string()}, {"prompts", {{"file", questions()}}}, {"max_new_tokens", 3},
                                  {"grid", {{"method", "sequential"}}}}).dump());
  const fs::path out = dir_ / "tiny-results";
  ASSERT_EQ(run({"sweep", (dir_ / "tiny.json").string(), "--out", out.string()}).code, 0);
  // Drop the last row, then replace the checkpoint by another one at the same path.
  const std::string rows = rows_text(out);
  write(out / "rows.jsonl", rows.substr(0, rows.rfind('\n', rows.size() - 2) + 1));
  fs::remove_all(model);
  ASSERT_EQ(run({"init-model", "--preset", "tiny", "--seed", "4", "--out", model.string()}).code, 0);
  const CliRun r = run({"sweep", (dir_ / "tiny.json").string(), "--out", out.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("the checkpoint changed since the rows in"), std::string::npos) << r.err;
  EXPECT_EQ(sweep::read_rows(out, false).size(), 3u) << "nothing is added";
}

TEST_F(SweepCommand, QuestionFilesAndTheirErrors) {
  write(dir_ / "mt.jsonl", R"({"question_id": 81, "category": "writing", "turns": ["In the beginning", "More."]})" "\n"
                                  R"({"question_id": 82, "category": "coding", "turns": ["def main("]})" "\n");
  write(dir_ / "seq.json", R"({"model": ")" + kModels + R"(/target", "max_new_tokens": 4, "grid": {"method": "sequential"}})");
  CliRun r = run({"sweep", (dir_ / "seq.json").string(), "--out", (dir_ / "questions").string(), "--prompts",
                  (dir_ / "mt.jsonl").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<json> rows = sweep::read_rows(dir_ / "questions", false);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["category"], "writing");
  EXPECT_EQ(rows[1]["prompt_id"], "82");
  write(dir_ / "bad.jsonl", R"({"question_id": 81, "turns": ["a"]})" "\n" R"({"question_id": 82, "turns": "b"})" "\n");
  r = run({"sweep", (dir_ / "seq.json").string(), "--out", (dir_ / "bad").string(), "--prompts", (dir_ / "bad.jsonl").string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("bad.jsonl:2: \"turns\" must be a non-empty list of strings"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "bad")) << "nothing is written for a bad spec";
  r = run({"sweep", (dir_ / "seq.json").string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  r = run({"sweep", (dir_ / "missing.json").string(), "--out", (dir_ / "x").string()});
  EXPECT_NE(r.err.find("cannot open sweep spec '" + (dir_ / "missing.json").string() + "'"), std::string::npos) << r.err;
}

TEST_F(SweepCommand, TyposFailBeforeAnyRun) {
  struct Case {
    const char* name;
    json change;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"drafter", {{"drafters", {{"eagle", kModels + "/no-such-head"}}}}, "no-such-head' of eagle k=1 greedy does not exist"},
      {"model", {{"model", kModels + "/no-such-model"}}, "no-such-model' is not a directory"},
      {"backend", {{"grid", {{"method", "sequential"}, {"backend", "tpu"}}}}, "tpu"},
      {"hardware", {{"predict", {{"hardware", "no-such-gpu"}, {"model", "llama-3.1-8b"}, {"drafters", {{"eagle", "eagle1-llama3-8b"}, {"draft", "draft-vicuna-68m"}, {"eagle3", "eagle3-llama3.1-8b"}}}}}}, "no-such-gpu"},
  };
  for (const Case& c : cases) {
    json spec = small_spec(questions());
    spec.merge_patch(c.change);
    write(dir_ / "typo.json", spec.dump());
    const fs::path out = dir_ / (std::string("typo-") + c.name);
    const CliRun r = run({"sweep", (dir_ / "typo.json").string(), "--out", out.string()});
    EXPECT_EQ(r.code, 1) << c.name;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.name << ": " << r.err;
    EXPECT_FALSE(fs::exists(out)) << c.name << ": nothing is written";
  }
}

// Sequential, an EAGLE-1 chain and a static tree, re-costed on an H100 with SGLang (an engine that
// verifies trees) for Llama-3.1-8B: six runs into `out`. Returns the command's error text ("" on
// success).
std::string run_predict_sweep(const fs::path& spec_file, const fs::path& out, const std::string& questions) {
  json spec = small_spec(questions);
  spec["grid"] = json::parse(R"([{"method": "sequential"}, {"method": "eagle", "k": 3}, {"method": "eagle", "tree": "mc_sim_7b_63"}])");
  spec["predict"] = {{"hardware", "h100-sxm"}, {"engine", "sglang"}, {"model", "llama-3.1-8b"},
                     {"drafters", {{"eagle", "eagle1-llama3-8b"}}}};
  write(spec_file, spec.dump());
  const CliRun r = run({"sweep", spec_file.string(), "--out", out.string()});
  return r.code == 0 ? "" : r.err + " (exit " + std::to_string(r.code) + ")";
}

TEST_F(SweepCommand, PredictedSpeedupFromTheRunsOwnSteps) {
  ASSERT_EQ(run_predict_sweep(dir_ / "predict.json", dir_ / "predict", questions()), "");
  const std::vector<json> rows = sweep::read_rows(dir_ / "predict", false);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_NEAR(rows[0]["predicted"]["speedup"].get<double>(), 1.0, 1e-9) << "sequential against itself";
  for (int i = 2; i < 6; ++i) {
    const json& p = rows[i]["predicted"];
    EXPECT_GT(p["speedup"].get<double>(), 0.0) << rows[i]["label"];
    EXPECT_EQ(p["hardware"], "h100-sxm");
    EXPECT_EQ(p["engine"], "sglang");
  }
  // The chain's predicted tokens per step replay its measured acceptance length.
  EXPECT_NEAR(rows[2]["predicted"]["tokens_per_step"].get<double>(), rows[2]["acceptance_length"].get<double>(), 1e-9);
}

TEST_F(SweepCommand, PlotScriptsWriteTheirFiles) {
  const fs::path out = dir_ / "plots";
  fs::create_directories(out);
  const std::string py = std::string(SPECDEC_PYTHON) + " " + SPECDEC_SOURCE_DIR + "/analysis/";
  const std::vector<std::pair<std::string, std::string>> scripts = {
      {"plot_al_vs_k.py", "al_vs_k"}, {"plot_acceptance_by_depth.py", "acceptance_by_depth"},
      {"plot_tree_shapes.py", "tree_shapes"}, {"plot_temperature.py", "temperature"}};
  for (const auto& [script, stem] : scripts) {
    const std::string cmd = py + script + " " + ref().string() + " --out " + (out / stem).string() + " > /dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    for (const char* ext : {".png", ".pdf"}) EXPECT_GT(fs::file_size(out / (stem + ext)), 1000u) << stem << ext;
  }
  ASSERT_EQ(run_predict_sweep(dir_ / "plot-predict.json", dir_ / "plot-predict", questions()), "");
  const std::string cmd = py + "plot_predicted_speedup.py " + (dir_ / "plot-predict").string() + " --out " + (out / "pred").string() + " > /dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_TRUE(fs::exists(out / "pred.png"));
  // The table script rewrites only the generated part of the file it is given.
  write(out / "doc.md", "# Title\n\nkept\n<!-- generated by analysis/sweep_table.py -->\nold\n<!-- end of generated part -->\ntail\n");
  const std::string table = py + "sweep_table.py " + ref().string() + " --out " + (out / "doc.md").string() + " > /dev/null 2>&1";
  EXPECT_EQ(std::system(table.c_str()), 0) << table;
  std::stringstream doc;
  doc << std::ifstream(out / "doc.md").rdbuf();
  EXPECT_EQ(doc.str().rfind("# Title\n\nkept\n<!-- generated by analysis/sweep_table.py -->\n", 0), 0u) << doc.str();
  EXPECT_NE(doc.str().find("## prose, greedy"), std::string::npos) << doc.str();
  EXPECT_NE(doc.str().find("| EAGLE-1 | "), std::string::npos) << doc.str();
  EXPECT_EQ(doc.str().find("\nold\n"), std::string::npos) << doc.str();
  EXPECT_NE(doc.str().find("<!-- end of generated part -->\ntail\n"), std::string::npos) << doc.str();
  // A directory without results is a clear error, not a traceback.
  const std::string bad = py + "plot_al_vs_k.py " + (dir_ / "nothing").string() + " --out " + (out / "x").string() + " 2>&1";
  FILE* p = popen(bad.c_str(), "r");
  std::string text;
  char buf[256];
  while (fgets(buf, sizeof buf, p)) text += buf;
  EXPECT_NE(pclose(p), 0);
  EXPECT_NE(text.find("no sweep results"), std::string::npos) << text;
  EXPECT_EQ(text.find("Traceback"), std::string::npos) << text;
}

}  // namespace
}  // namespace specdec
