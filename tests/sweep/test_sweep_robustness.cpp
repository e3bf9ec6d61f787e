// Hostile sweep specs and misused results directories: limits checked when the spec is read (thread
// counts, K, grid and run counts counted before anything is built), JSON nested deep enough to
// overflow the stack, every cell checked before the first run, one writer per results directory,
// and merges of shards computed with different weights. Cases that crashed or hung before their fix
// run the specdec binary in a child process with a timeout.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "experiments/sweep/dir_lock.hpp"
#include "experiments/sweep/results_store.hpp"
#include "experiments/sweep/sweep_spec.hpp"
#include "reference/core/error.hpp"
#include "tests/cli/cli_runner.hpp"
#include "tests/reference/scratch_dir.hpp"
#include "tests/reliability/child_process.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::Child;
using testing::CliRun;
using testing::quoted;
using testing::run_shell;
using testing::ScratchDir;

const std::string kModels = std::string(SPECDEC_SOURCE_DIR) + "/models";

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

std::string specdec_cmd(const std::string& args) { return quoted(SPECDEC_BINARY) + " " + args; }

// The error text of reading `j` as a sweep spec, or "" when it is accepted.
std::string spec_error(const json& j) {
  try {
    sweep::parse_sweep_spec(j, "spec.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

json base_spec() {
  return json::parse(R"({"model": "models/target", "prompts": {"set": "heldout", "per_category": 1}, "max_new_tokens": 8,
                         "grid": {"method": "sequential"}})");
}

json numbers(int n, double scale) {
  json a = json::array();
  for (int i = 0; i < n; ++i) a.push_back((i + 1) * scale);
  return a;
}

json integers(int n) {
  json a = json::array();
  for (int i = 0; i < n; ++i) a.push_back(i + 1);
  return a;
}

// ---- limits when the spec is read ---------------------------------------------------------------

TEST(SweepSpecLimits, ThreadsAboveTheLimitAreRefusedWhenTheSpecIsRead) {
  json j = base_spec();
  j["threads"] = 100000;
  EXPECT_NE(spec_error(j).find("spec.json: threads is 100000, more than specdec supports (1024)"), std::string::npos) << spec_error(j);
  j["threads"] = 1024;
  EXPECT_EQ(spec_error(j), "");
}

TEST(SweepSpecLimits, DraftShapesBeyondTheDraftLimitsAreRefusedWhenTheSpecIsRead) {
  struct Case {
    const char* name;
    const char* grid;
    std::vector<const char*> expected;  // besides the spec's name
  };
  const std::vector<Case> cases = {
      {"K list", R"({"method": "eagle", "k": [4, 100]})", {"grid (eagle k=100 greedy)", "K is 100, more than specdec supports (64)"}},
      {"K of a million", R"([{"method": "sequential"}, {"method": "draft", "k": [1, 1000000]}])",
       {"grid[1] (draft k=1000000 greedy)", "more than specdec supports (64)"}},
      {"dynamic depth", R"({"method": "eagle3", "tree": "dynamic", "depth": 65})", {"the expansion depth is 65"}},
      {"dynamic top-k", R"({"method": "eagle3", "tree": "dynamic", "tree_top_k": 1000})", {"top-k is 1000"}},
      {"total tokens", R"({"method": "eagle3", "tree": "dynamic", "total_tokens": 100000})", {"draft nodes per step) is 99999"}},
      {"suffix budget", R"({"method": "suffix", "k": 5000})", {"K is 5000, more than specdec supports (1024)"}},
      {"tree file", R"({"method": "eagle", "tree": "/nonexistent/tree.json"})", {"/nonexistent/tree.json"}},
  };
  for (const Case& c : cases) {
    json j = base_spec();
    j["grid"] = json::parse(c.grid);
    const std::string e = spec_error(j);
    EXPECT_EQ(e.rfind("spec.json: ", 0), 0u) << c.name << ": the message names the spec: " << e;
    for (const char* x : c.expected) EXPECT_NE(e.find(x), std::string::npos) << c.name << ": '" << x << "' not in '" << e << "'";
  }
  // A static tree deeper than 64, given inline.
  json deep = json::array();
  for (int d = 1; d <= 65; ++d) deep.push_back(std::vector<int>(d, 0));
  json j = base_spec();
  j["grid"] = {{"method", "eagle"}, {"tree", deep}};
  EXPECT_NE(spec_error(j).find("the depth of path #64 is 65"), std::string::npos) << spec_error(j);
  // Within the limits: accepted (the draft-free methods' exact limits are their proposers', checked
  // before the first run).
  j["grid"] = json::parse(R"([{"method": "eagle", "k": 64}, {"method": "suffix", "k": 100}])");
  EXPECT_EQ(spec_error(j), "");
}

TEST(SweepSpecLimits, GridsAreCountedBeforeTheyAreBuilt) {
  const auto started = std::chrono::steady_clock::now();
  // 10^9 cells in a few kilobytes: refused at once, naming the axes.
  json j = base_spec();
  j["grid"] = {{"method", "sequential"}, {"sampling", "sample"}, {"temperature", numbers(1000, 0.001)},
               {"top_p", numbers(1000, 0.001)}, {"seed", integers(1000)}};
  std::string e = spec_error(j);
  EXPECT_NE(e.find("spec.json: grid: 1 method x 1 sampling x 1000 temperature x 1000 top_p x 1000 seed make 1000000000 cells, "
                   "more than specdec supports (100000)"),
            std::string::npos)
      << e;
  // Just past the limit (200,000 cells; every one distinct).
  j["grid"]["temperature"] = numbers(200, 0.001);
  j["grid"].erase("top_p");
  e = spec_error(j);
  EXPECT_NE(e.find("make 200000 cells, more than specdec supports (100000)"), std::string::npos) << e;
  // Seven axes of a thousand values: the product does not fit 64 bits.
  j["grid"] = {{"method", "sequential"}, {"sampling", "sample"}};
  for (const char* axis : {"k", "depth", "tree_top_k", "total_tokens", "temperature", "top_p", "seed"}) j["grid"][axis] = integers(1000);
  e = spec_error(j);
  EXPECT_NE(e.find("make more than 2^64 cells"), std::string::npos) << e;
  // Blocks within the limit each, beyond it together.
  j["grid"] = json::array();
  for (int b = 0; b < 2; ++b) j["grid"].push_back({{"method", "sequential"}, {"sampling", "sample"}, {"temperature", numbers(60, 0.01)}, {"seed", integers(1000)}});
  e = spec_error(j);
  EXPECT_NE(e.find("spec.json: grid: its blocks make 60000 + 60000 = 120000 cells"), std::string::npos) << e;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 5.0)
      << "grids are counted, not built";
}

TEST(SweepSpecLimits, RunsBeyondTheLimitAreRefused) {
  ScratchDir dir("sweep-runs");
  std::string lines;
  for (int i = 0; i < 20001; ++i) lines += R"({"question_id": )" + std::to_string(i) + R"(, "turns": ["q"]})" "\n";
  write(dir / "q.jsonl", lines);
  json j = base_spec();
  j["prompts"] = (dir / "q.jsonl").string();
  j["grid"] = {{"method", "sequential"}, {"sampling", "sample"}, {"seed", integers(50)}};
  const std::string e = spec_error(j);
  EXPECT_NE(e.find("spec.json: 50 cells x 20001 prompts make 1000050 runs, more than specdec supports (1000000)"), std::string::npos) << e;
}

// ---- JSON nesting and files that are not regular ----------------------------------------------------

std::string nested(int depth) { return std::string(size_t(depth), '[') + std::string(size_t(depth), ']'); }

TEST(SweepHostileFiles, DeeplyNestedJsonIsRefusedNotAStackOverflow) {
  ScratchDir dir("sweep-deep");
  // A 400 KB spec holding a 200,000-deep value.
  write(dir / "spec.json", R"({"model": ")" + kModels + R"(/target", "description": )" + nested(200000) +
                               R"(, "grid": {"method": "sequential"}})");
  Child c = run_shell(specdec_cmd("sweep " + quoted((dir / "spec.json").string()) + " --out " + quoted((dir / "out").string())), dir, 60);
  EXPECT_EQ(c.code, 1) << "stderr:\n" << c.err.substr(0, 2000);
  EXPECT_NE(c.err.find("spec.json"), std::string::npos) << c.err.substr(0, 2000);
  EXPECT_NE(c.err.find("JSON nests deeper than 128 levels"), std::string::npos) << c.err.substr(0, 2000);
  EXPECT_FALSE(fs::exists(dir / "out"));

  // A prompt file of each kind, through --prompts.
  const json seq = {{"model", kModels + "/target"}, {"max_new_tokens", 2}, {"grid", {{"method", "sequential"}}}};
  write(dir / "seq.json", seq.dump());
  write(dir / "deep.jsonl", R"({"question_id": 1, "turns": )" + nested(200000) + "}\n");
  write(dir / "deep.json", R"({"prose": )" + nested(200000) + "}");
  for (const char* file : {"deep.jsonl", "deep.json"}) {
    c = run_shell(specdec_cmd("sweep " + quoted((dir / "seq.json").string()) + " --out " + quoted((dir / "out").string()) +
                              " --prompts " + quoted((dir / file).string())),
                  dir, 60);
    EXPECT_EQ(c.code, 1) << file << ": " << c.err.substr(0, 2000);
    EXPECT_NE(c.err.find("JSON nests deeper than 128 levels"), std::string::npos) << file << ": " << c.err.substr(0, 2000);
  }

  // A results directory's manifest and rows, read when the sweep resumes and when shards merge.
  write(dir / "q.jsonl", R"({"question_id": 1, "turns": ["In the beginning"]})" "\n");
  const std::string sweep = specdec_cmd("sweep " + quoted((dir / "seq.json").string()) + " --prompts " + quoted((dir / "q.jsonl").string()) +
                                        " --out " + quoted((dir / "res").string()));
  ASSERT_EQ(run_shell(sweep, dir, 60).code, 0);
  const std::string rows = testing::slurp(dir / "res" / "rows.jsonl");
  write(dir / "res" / "rows.jsonl", R"({"run": 0, "x": )" + nested(200000) + "}\n");
  c = run_shell(sweep, dir, 60);
  EXPECT_EQ(c.code, 1) << c.err.substr(0, 2000);
  EXPECT_NE(c.err.find("rows.jsonl:1: not a result row"), std::string::npos) << c.err.substr(0, 2000);
  EXPECT_NE(c.err.find("JSON nests deeper than 128 levels"), std::string::npos) << c.err.substr(0, 2000);
  c = run_shell(specdec_cmd("sweep merge --out " + quoted((dir / "merged").string()) + " " + quoted((dir / "res").string())), dir, 60);
  EXPECT_EQ(c.code, 1) << c.err.substr(0, 2000);
  EXPECT_NE(c.err.find("JSON nests deeper than 128 levels"), std::string::npos) << c.err.substr(0, 2000);
  write(dir / "res" / "rows.jsonl", rows);
  write(dir / "res" / "manifest.json", R"({"format": "specdec-sweep-results-1", "spec": )" + nested(200000) + "}");
  c = run_shell(sweep, dir, 60);
  EXPECT_EQ(c.code, 1) << c.err.substr(0, 2000);
  EXPECT_NE(c.err.find("manifest.json is not a sweep manifest"), std::string::npos) << c.err.substr(0, 2000);
  EXPECT_NE(c.err.find("JSON nests deeper than 128 levels"), std::string::npos) << c.err.substr(0, 2000);
}

TEST(SweepHostileFiles, APipeOrADeviceIsRefusedNotReadForever) {
  ScratchDir dir("sweep-fifo");
  ASSERT_EQ(mkfifo((dir / "spec.json").c_str(), 0600), 0);
  Child c = run_shell(specdec_cmd("sweep " + quoted((dir / "spec.json").string()) + " --out " + quoted((dir / "out").string())), dir, 30);
  EXPECT_EQ(c.code, 1) << c.err;
  EXPECT_NE(c.err.find("is a pipe (FIFO), expected a regular file"), std::string::npos) << c.err;
  const json seq = {{"model", kModels + "/target"}, {"max_new_tokens", 2}, {"grid", {{"method", "sequential"}}}};
  write(dir / "seq.json", seq.dump());
  fs::create_symlink("/dev/zero", dir / "zero.jsonl");
  c = run_shell(specdec_cmd("sweep " + quoted((dir / "seq.json").string()) + " --out " + quoted((dir / "out").string()) +
                            " --prompts " + quoted((dir / "zero.jsonl").string())),
                dir, 30);
  EXPECT_EQ(c.code, 1) << c.err;
  EXPECT_NE(c.err.find("is a character device, expected a regular file"), std::string::npos) << c.err;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

// ---- the command on the bundled models ---------------------------------------------------------------

class SweepRobustness : public ::testing::Test {
 protected:
  void SetUp() override {
    write(dir_ / "q.jsonl", R"({"question_id": "p1", "category": "prose", "turns": ["And God said, Let there be"]})" "\n"
                            R"({"question_id": "c1", "category": "code", "turns": ["def main():\n    "]})" "\n");
  }
  // A quick sweep: `grid` on the two questions, `tokens` tokens each.
  fs::path spec(const json& grid, int tokens = 4, const std::string& model = kModels + "/target") {
    const fs::path p = dir_ / "spec.json";
    write(p, json({{"model", model},
                   {"drafters", {{"eagle", kModels + "/eagle1"}, {"draft", kModels + "/draft"}}},
                   {"prompts", (dir_ / "q.jsonl").string()},
                   {"max_new_tokens", tokens},
                   {"grid", grid}})
                 .dump());
    return p;
  }
  ScratchDir dir_{"sweep-robust"};
};

// Holds the lock of `dir` as a running sweep does (its pid written into the lock file).
struct HeldLock {
  explicit HeldLock(const fs::path& dir) {
    fs::create_directories(dir);
    fd = ::open(sweep::lock_file_path(dir).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
    const std::string pid = std::to_string(::getpid()) + "\n";
    EXPECT_EQ(::pwrite(fd, pid.data(), pid.size(), 0), static_cast<ssize_t>(pid.size()));
  }
  ~HeldLock() { ::close(fd); }
  int fd = -1;
};

TEST_F(SweepRobustness, AResultsDirectoryBeingWrittenIsRefused) {
  const fs::path s = spec({{"method", "sequential"}});
  const fs::path out = dir_ / "out";
  const std::string held = " is being written by another sweep (pid " + std::to_string(::getpid()) + ")";
  {
    const HeldLock lock(out);
    const CliRun r = testing::run({"sweep", s.string(), "--out", out.string()});
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.err.find("specdec sweep: error: sweep: " + out.string() + held), std::string::npos) << r.err;
    EXPECT_EQ(ScratchDir::entries_of(out), std::vector<std::string>{sweep::kLockFileName}) << "nothing is written";
  }
  // Released (as the kernel releases a killed sweep's lock): the sweep runs, and a second run resumes.
  CliRun r = testing::run({"sweep", s.string(), "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(sweep::read_rows(out, false).size(), 2u);
  r = testing::run({"sweep", s.string(), "--out", out.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("0 runs to do, 2 already done"), std::string::npos) << r.out;

  // Merge: into a directory being written, and from a shard being written.
  const fs::path merged = dir_ / "merged";
  {
    const HeldLock lock(merged);
    r = testing::run({"sweep", "merge", "--out", merged.string(), out.string()});
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("merge: " + merged.string() + held), std::string::npos) << r.err;
    EXPECT_EQ(ScratchDir::entries_of(merged), std::vector<std::string>{sweep::kLockFileName});
  }
  {
    const HeldLock lock(out);
    r = testing::run({"sweep", "merge", "--out", (dir_ / "merged2").string(), out.string()});
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("merge: " + out.string() + held), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "merged2"));
  }
  r = testing::run({"sweep", "merge", "--out", merged.string(), out.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(sweep::read_rows(merged, false).size(), 2u);
}

pid_t start_sweep(const fs::path& spec, const fs::path& out, const fs::path& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    execl(SPECDEC_BINARY, SPECDEC_BINARY, "sweep", spec.c_str(), "--out", out.c_str(), (char*)nullptr);
    _exit(127);
  }
  return pid;
}

// Two processes on one --out (a resubmitted Slurm array): each run's row is written once, and a
// process that finds the directory being written exits 1 without running anything.
TEST_F(SweepRobustness, TwoSweepsOnOneDirectoryNeverDuplicateARow) {
  const fs::path s = spec({{"method", "eagle"}, {"k", json::array({1, 2, 3})}}, 6);
  const fs::path out = dir_ / "out";
  const pid_t a = start_sweep(s, out, dir_ / "a.log"), b = start_sweep(s, out, dir_ / "b.log");
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  int sa = 0, sb = 0;
  ::waitpid(a, &sa, 0);
  ::waitpid(b, &sb, 0);
  ASSERT_TRUE(WIFEXITED(sa) && WIFEXITED(sb)) << "a sweep crashed";
  int succeeded = 0;
  for (const auto& [status, log] : {std::pair{sa, dir_ / "a.log"}, std::pair{sb, dir_ / "b.log"}}) {
    if (WEXITSTATUS(status) == 0) {
      ++succeeded;
    } else {
      EXPECT_EQ(WEXITSTATUS(status), 1);
      EXPECT_NE(testing::slurp(log).find(" is being written by another sweep (pid "), std::string::npos) << testing::slurp(log);
    }
  }
  EXPECT_GE(succeeded, 1);
  std::multiset<int64_t> runs;
  for (const json& r : sweep::read_rows(out, false)) runs.insert(r["run"].get<int64_t>());
  EXPECT_EQ(runs, (std::multiset<int64_t>{0, 1, 2, 3, 4, 5})) << "every run once";
  const json summary = json::parse(std::ifstream(out / "summary.json"));
  EXPECT_EQ(summary["runs"], 6);
  const CliRun again = testing::run({"sweep", s.string(), "--out", out.string()});
  EXPECT_EQ(again.code, 0) << again.err;
}

TEST_F(SweepRobustness, MergeRefusesShardsComputedWithDifferentWeights) {
  const fs::path model = dir_ / "tiny";
  ASSERT_EQ(testing::run({"init-model", "--preset", "tiny", "--seed", "3", "--out", model.string()}).code, 0);
  const fs::path s = spec({{"method", "sequential"}}, 3, model.string());
  const fs::path one = dir_ / "shard1", two = dir_ / "shard2";
  ASSERT_EQ(testing::run({"sweep", s.string(), "--out", one.string(), "--shard", "1/2"}).code, 0);
  // The checkpoint is replaced at the same path between the shards.
  fs::remove_all(model);
  ASSERT_EQ(testing::run({"init-model", "--preset", "tiny", "--seed", "4", "--out", model.string()}).code, 0);
  ASSERT_EQ(testing::run({"sweep", s.string(), "--out", two.string(), "--shard", "2/2"}).code, 0);
  const fs::path merged = dir_ / "merged";
  const CliRun r = testing::run({"sweep", "merge", "--out", merged.string(), one.string(), two.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("merge: " + one.string() + " and " + two.string() + " were computed with different weights of the target model ("),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(merged)) << "nothing is written";
}

TEST_F(SweepRobustness, EveryCellIsCheckedBeforeTheFirstRun) {
  struct Case {
    const char* name;
    json grid;
    std::vector<std::string> expected;
  };
  std::string longest(9000, 'a');
  for (size_t i = 0; i < longest.size(); i += 2) longest[i] = ' ';
  const std::vector<Case> cases = {
      // A rank the drafter's vocabulary lacks: only the loaded head knows its size.
      {"tree rank", json::parse(R"([{"method": "sequential"}, {"method": "eagle", "tree": [[0], [1], [100000]]}])"),
       {": cell 1 (eagle tree=[[0],[1],[100000]] greedy)", "ranks must be <"}},
      // A draft-free method's own limit on K (64 for n-gram lookup; the spec allows 1024 to these methods).
      {"n-gram K", json::parse(R"([{"method": "sequential"}, {"method": "ngram", "k": 100}])"),
       {": cell 1 (ngram k=100 greedy)", "K is 100, more than specdec supports (64)"}},
      // A drafter that is not an EAGLE-1 head.
      {"drafter kind", json::parse(R"([{"method": "sequential"}, {"method": "eagle", "drafter": ")" + kModels + R"(/eagle3"}])"),
       {": cell 1 (eagle k=4 greedy)", "eagle3"}},
  };
  for (const Case& c : cases) {
    const fs::path s = spec(c.grid);
    const fs::path out = dir_ / (std::string("out-") + c.name);
    const CliRun r = testing::run({"sweep", s.string(), "--out", out.string()});
    EXPECT_EQ(r.code, 1) << c.name;
    EXPECT_NE(r.err.find(s.string()), std::string::npos) << c.name << ": the message names the spec: " << r.err;
    for (const std::string& x : c.expected) EXPECT_NE(r.err.find(x), std::string::npos) << c.name << ": '" << x << "' not in " << r.err;
    EXPECT_FALSE(fs::exists(out)) << c.name << ": nothing is written";
  }
  // A prompt (the second) too long for the model's context with max_new_tokens.
  write(dir_ / "q.jsonl", R"({"question_id": "short", "turns": ["In the beginning"]})" "\n" R"({"question_id": "long", "turns": [")" +
                              longest + R"("]})" "\n");
  const fs::path s = spec(json::parse(R"([{"method": "sequential"}, {"method": "eagle", "k": 2}])"), 8);
  const fs::path out = dir_ / "out-long";
  const CliRun r = testing::run({"sweep", s.string(), "--out", out.string()});
  EXPECT_EQ(r.code, 1);
  for (const std::string& x : {s.string() + ": cell 0 (sequential greedy), prompt " + (dir_ / "q.jsonl").string() + "/long (",
                               std::string("the model's context length is 2048")})
    EXPECT_NE(r.err.find(x), std::string::npos) << "'" << x << "' not in " << r.err;
  EXPECT_FALSE(fs::exists(out)) << "nothing is written";
}

}  // namespace
}  // namespace specdec
