// specdec bench on the tiny preset with a few tokens: the tables, the CSV and JSON files and their
// columns, positive and finite numbers, acceptance replayed from a recorded trace, and the errors
// a user can hit. No timing is asserted: the machine is shared.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "experiments/bench/replay_acceptor.hpp"
#include "runtime/backend.hpp"
#include "runtime/random_drafters.hpp"
#include "runtime/thread_count.hpp"
#include "reference/core/error.hpp"
#include "reference/core/half.hpp"
#include "reference/drafters/eagle_tensors.hpp"
#include "reference/methods/registry.hpp"
#include "reference/model/precision.hpp"
#include "tests/cli/cli_runner.hpp"
#include "tests/reference/error_capture.hpp"
#include "tests/reference/model_fixtures.hpp"
#include "tests/reference/scratch_dir.hpp"

namespace specdec {
namespace {

using testing::CliRun;
using testing::error_of;
using testing::run;

std::vector<std::vector<std::string>> read_csv(const std::filesystem::path& p) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(testing::read_text(p));
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.emplace_back();
    rows.push_back(cells);
  }
  return rows;
}

double number(const std::string& cell, const std::string& where) {
  size_t used = 0;
  const double v = std::stod(cell, &used);
  EXPECT_EQ(used, cell.size()) << where << ": '" << cell << "'";
  return v;
}

const std::vector<std::string> kQuick = {"--preset", "tiny", "--tokens", "6", "--repeat", "1", "--prompt-length", "4",
                                         "--max-verify", "4", "--bandwidth-mb", "16", "--k", "3"};

TEST(BenchCommand, WritesTablesCsvAndJson) {
  testing::ScratchDir dir("bench");
  std::vector<std::string> args = {"bench"};
  args.insert(args.end(), kQuick.begin(), kQuick.end());
  args.insert(args.end(), {"--out", (dir / "out").string()});
  const CliRun r = run(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("sequential decode"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verify forward cost"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("eagle3"), std::string::npos) << r.out;

  int backends = 0;
  for (const std::string& b : known_backends()) backends += backend_available(b) ? 1 : 0;

  const auto decode = read_csv(dir / "out" / "decode.csv");
  ASSERT_EQ(decode.size(), 1u + backends);
  EXPECT_EQ(decode[0], (std::vector<std::string>{"backend", "precision", "weight_bytes_per_token", "tokens_per_s", "achieved_bytes_per_s",
                                                 "bandwidth_bytes_per_s", "bandwidth_fraction", "threads"}));
  for (size_t i = 1; i < decode.size(); ++i) {
    ASSERT_EQ(decode[i].size(), decode[0].size());
    EXPECT_EQ(decode[i][1], "F32");
    for (size_t c = 2; c < decode[i].size(); ++c) {
      const double v = number(decode[i][c], "decode." + decode[0][c]);
      EXPECT_TRUE(std::isfinite(v) && v > 0) << decode[0][c] << " = " << v;
    }
  }
  EXPECT_EQ(decode[1][0], "reference");
  // The reference streams fp32 weights: 4 bytes per parameter read (all but the embedding table,
  // of which one row is read).
  EXPECT_NEAR(number(decode[1][2], "weight bytes"), 4.0 * (3.0e6), 1.5e6);

  const auto verify = read_csv(dir / "out" / "verify_cost.csv");
  EXPECT_EQ(verify[0], (std::vector<std::string>{"backend", "tokens", "ms", "ratio_to_1"}));
  ASSERT_EQ(verify.size(), 1u + 3u * backends);  // 1, 2, 4 tokens
  for (size_t i = 1; i < verify.size(); ++i) {
    EXPECT_EQ(verify[i][1], std::to_string(1 << ((i - 1) % 3)));
    EXPECT_GT(number(verify[i][2], "ms"), 0);
    EXPECT_GT(number(verify[i][3], "ratio"), 0);
    if (verify[i][1] == "1") {
      EXPECT_EQ(verify[i][3], "1");
    }
  }

  const auto methods = read_csv(dir / "out" / "methods.csv");
  EXPECT_EQ(methods[0], (std::vector<std::string>{"backend", "method", "shape", "drafter", "acceptance", "steps", "acceptance_length",
                                                  "drafter_ms_per_step", "drafter_forwards_per_step", "drafter_per_target_forward",
                                                  "verify_ms_per_step", "tokens_per_s", "speedup", "over_reference"}));
  const std::size_t every_method = method_registry().size();  // sequential and every drafting method, per backend
  ASSERT_EQ(methods.size(), 1u + every_method * backends);
  for (size_t i = 1; i < methods.size(); ++i) {
    const auto& m = methods[i];
    ASSERT_EQ(m.size(), methods[0].size()) << i;
    EXPECT_GT(number(m[11], "tokens_per_s"), 0) << m[1];
    EXPECT_GT(number(m[12], "speedup"), 0) << m[1];
    EXPECT_GE(number(m[6], "acceptance_length"), 1.0) << m[1];
    if (m[1] == "sequential") {
      EXPECT_EQ(m[12], "1");
      continue;
    }
    EXPECT_EQ(m[2], "k=3") << m[1];
    const bool draft_free = !method_entry(m[1]).drafter.loads_checkpoint();  // drafts from the token history
    EXPECT_EQ(m[3], draft_free ? "-" : "random") << m[1];
    EXPECT_EQ(m[4], "greedy") << m[1];
    EXPECT_GE(number(m[5], "steps"), 1) << m[1];
    EXPECT_GE(number(m[7], "drafter_ms_per_step"), 0) << m[1];
    if (draft_free) {
      EXPECT_EQ(number(m[8], "drafter_forwards_per_step"), 0) << m[1];
    } else {
      EXPECT_GT(number(m[7], "drafter_ms_per_step"), 0) << m[1];
      EXPECT_GT(number(m[8], "drafter_forwards_per_step"), 0) << m[1];
    }
    EXPECT_GT(number(m[10], "verify_ms_per_step"), 0) << m[1];
    EXPECT_EQ(m[13].empty(), m[0] == "reference") << "over_reference only for other backends";
  }

  const auto j = nlohmann::json::parse(testing::read_text(dir / "out" / "bench.json"));
  EXPECT_GT(j["bandwidth"]["bytes_per_s"].get<double>(), 0);
  EXPECT_GE(j["bandwidth"]["threads"].get<int>(), 1);
  EXPECT_EQ(j["bandwidth"]["buffer_bytes"].get<double>(), 16.0 * 1024 * 1024);
  EXPECT_EQ(j["decode"].size(), static_cast<size_t>(backends));
  EXPECT_EQ(j["verify_cost"].size(), 3u * backends);
  EXPECT_EQ(j["methods"].size(), every_method * backends);
  EXPECT_EQ(j["options"]["tokens"], 6);
  if (backend_available("cpu")) {  // the cpu kernels' path, printed and in bench.json
    EXPECT_EQ(j["cpu_isa"], cpu_kernel_path());
    EXPECT_NE(r.out.find("cpu path   " + cpu_kernel_path() + " kernels"), std::string::npos) << r.out;
  }
  for (const auto& row : j["methods"]) EXPECT_TRUE(row["tokens_per_s"].is_number()) << row.dump();
  EXPECT_EQ(dir.entries_of(dir / "out"), (std::vector<std::string>{"bench.json", "decode.csv", "methods.csv", "verify_cost.csv"}));
}

// Replaying a trace in which every draft was accepted (a model drafting for itself, K = 3) gives
// every chain method AL = K + 1 with the real forwards.
TEST(BenchCommand, ReplaysAcceptanceFromATrace) {
  testing::ScratchDir dir("bench-replay");
  const std::string model = (dir / "tiny").string(), trace = (dir / "self.h5").string();
  ASSERT_EQ(run({"init-model", "--preset", "tiny", "--out", model}).code, 0);
  const CliRun rec = run({"record", "--model", model, "--method", "draft", "--drafter", model, "--k", "3", "--prompt", "ab",
                          "--max-new-tokens", "12", "--ignore-eos", "--out", trace});
  ASSERT_EQ(rec.code, 0) << rec.err;
  std::vector<std::string> args = {"bench", "--json", "--methods", "sequential,draft,eagle,peagle", "--backends", "reference",
                                   "--acceptance-trace", trace, "--tokens", "12"};
  for (size_t i = 0; i < kQuick.size(); ++i) {
    if (kQuick[i] == "--tokens") {
      ++i;
      continue;
    }
    args.push_back(kQuick[i]);
  }
  const CliRun r = run(args);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j["warnings"].is_array()) << "what makes the timings unreliable (a busy machine, disagreeing repeats)";
  ASSERT_EQ(j["methods"].size(), 4u);
  for (const auto& m : j["methods"]) {
    if (m["method"] == "sequential") continue;
    EXPECT_EQ(m["acceptance"], "replayed from " + trace) << m.dump();
    // 12 tokens: the prefill's token, then steps of K + 1 = 4 (the last one cut to 3).
    EXPECT_DOUBLE_EQ(m["acceptance_length"].get<double>(), 4.0) << m.dump();
    EXPECT_EQ(m["steps"], 3) << m.dump();
  }
}

TEST(BenchCommand, ReplayAcceptorFollowsTheFirstChildPath) {
  const DraftTree tree{{5, 6, 7, 8}, {-1, -1, 0, 2}};  // root -> 0 -> 2 -> 3, and 1 beside 0
  Matrix logits = Matrix::Zero(5, 10);
  for (int r = 0; r < 5; ++r) logits(r, r) = 1.0f;  // row r's greedy token is r
  ReplayAcceptor replay({2, 0, 9});
  VerifyInput in;
  in.tree = &tree;
  in.target_logits = &logits;
  VerifyResult v = replay.verify(in);
  EXPECT_EQ(v.accepted_nodes, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(v.emitted, (std::vector<int32_t>{5, 7, 3}));  // then row 3's greedy token
  EXPECT_EQ(v.bonus_token, -1);
  v = replay.verify(in);
  EXPECT_TRUE(v.accepted_nodes.empty());
  EXPECT_EQ(v.emitted, (std::vector<int32_t>{0}));
  v = replay.verify(in);  // 9 wanted, the path is 3 deep
  EXPECT_EQ(v.accepted_nodes, (std::vector<int32_t>{0, 2, 3}));
  EXPECT_EQ(v.bonus_token, 4);
  EXPECT_THROW(ReplayAcceptor({}), Error);
  EXPECT_THROW(ReplayAcceptor({1, -1}), Error);
}

// Random bench heads are stored like the target: round_head rounds every float tensor and
// keeps the config and target; bind_head moves a head between backends.
TEST(BenchCommand, RoundHeadAndBindHead) {
  const Transformer target = testing::make_model(testing::tiny_llama(), 5);
  const EagleHead head = random_eagle_head(random_head_config(EagleKind::eagle3, target.config(), 0, {0, 1}), target, 6, 0.02f);
  for (Dtype p : {Dtype::BF16, Dtype::F16}) {
    const EagleHead r = round_head(head, p);
    EXPECT_TRUE(r.target() == TargetTensors(target));
    EXPECT_EQ(r.config().kind, EagleKind::eagle3);
    const auto round = [p](float v) { return p == Dtype::BF16 ? bfloat16_to_float(float_to_bfloat16(v)) : half_to_float(float_to_half(v)); };
    int changed = 0;
    const auto check = [&](const float* want, const float* got, Eigen::Index n, const std::string& name) {
      for (Eigen::Index i = 0; i < n; ++i) {
        ASSERT_EQ(got[i], round(want[i])) << dtype_name(p) << " " << name << " element " << i;
        changed += got[i] != want[i];
      }
    };
    check(head.weights().fc.data(), r.weights().fc.data(), head.weights().fc.size(), "fc");
    check(head.weights().lm_head.data(), r.weights().lm_head.data(), head.weights().lm_head.size(), "lm_head");
    check(head.weights().hidden_norm.data(), r.weights().hidden_norm.data(), head.weights().hidden_norm.size(), "hidden_norm");
    const LayerWeights &a = head.weights().layers[0], &b = r.weights().layers[0];
    check(a.q_proj.data(), b.q_proj.data(), a.q_proj.size(), "q_proj");
    check(a.down_proj.data(), b.down_proj.data(), a.down_proj.size(), "down_proj");
    EXPECT_GT(changed, 0) << dtype_name(p) << ": random fp32 weights are not all representable";
  }
  EXPECT_EQ(&round_head(head, Dtype::F32).weights(), &head.weights()) << "F32 keeps the weights as they are";
  EXPECT_NE(error_of([&] { round_head(head, Dtype::I32); }).find("round_head: unsupported weight precision I32"), std::string::npos);

  EXPECT_EQ(bind_head("reference", head).engine(), nullptr);
  if (backend_available("cpu")) {
    EXPECT_EQ(bind_head("cpu", head).engine()->name(), "cpu");
  }
  EXPECT_NE(error_of([&] { bind_head("gpu", head); }).find("backend 'gpu' is not a backend"), std::string::npos);
}

TEST(BenchCommand, UserErrors) {
  testing::ScratchDir dir("bench-errors");
  const std::string model = (dir / "tiny").string(), trace = (dir / "seq.h5").string();
  ASSERT_EQ(run({"init-model", "--preset", "tiny", "--out", model}).code, 0);
  ASSERT_EQ(run({"record", "--model", model, "--prompt", "a", "--max-new-tokens", "3", "--out", trace}).code, 0);
  testing::write_text(dir / "file", "x");
  struct Case {
    std::vector<std::string> args;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {{"bench", "--preset", "huge"}, "known presets"},
      {{"bench", "--preset", "tiny", "--model", model}, "either --model or --preset"},
      {{"bench", "--backends", "gpu"}, "'gpu' is not a backend"},
      {{"bench", "--methods", "sequential,hydra"}, "known methods"},
      {{"bench", "--methods", "draft,", "--k", "2"}, "empty entry"},
      {{"bench", "--k", "0"}, "--k must be >= 1"},
      {{"bench", "--tokens", "1"}, "--tokens must be >= 2"},
      {{"bench", "--repeat", "0"}, "--repeat must be >= 1"},
      {{"bench", "--dtype", "I8"}, "--dtype"},
      {{"bench", "--acceptance-trace", trace}, "sequential"},
      {{"bench", "--acceptance-trace", (dir / "missing.h5").string()}, "missing.h5"},
      {{"bench", "--model", (dir / "nothing").string()}, "nothing"},
      {{"bench", "--preset", "tiny", "--eagle", model}, "go with --model"},
      {{"bench", "--out", (dir / "file").string()}, "not a directory"},
  };
  for (const Case& c : cases) {
    std::string cmd;
    for (const auto& a : c.args) cmd += a + " ";
    const CliRun r = run(c.args);
    EXPECT_EQ(r.code, 1) << cmd << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << cmd << "\nstderr: " << r.err;
  }
}

// --threads 0: the cores other processes are not busy on, read from /proc/loadavg's load average
// and runnable count (the smaller, so that neither a process that just started nor a past minute's
// load alone takes a core away), at least one thread.
TEST(ThreadCount, LeavesOutTheCoresOtherProcessesAreBusyOn) {
  struct Case {
    std::string loadavg;
    int cores, busy, threads;
  };
  for (const Case& c : std::vector<Case>{{"1.20 1.06 1.31 3/84 17673", 2, 1, 1},   // one other runnable, load 1
                                         {"0.10 0.20 0.30 1/84 17673", 8, 0, 8},   // only the reader runs
                                         {"0.30 0.20 0.30 4/84 17673", 8, 0, 8},   // runnable now, no load before
                                         {"6.00 5.00 4.00 1/84 17673", 8, 0, 8},   // a load that just ended
                                         {"7.60 7.00 7.00 12/99 1", 8, 7, 1},      // all busy: still one thread
                                         {"2.40 2.00 2.00 4/99 1", 16, 2, 14},
                                         {"garbage", 4, 0, 4},
                                         {"nan 1 1 3/4 5", 4, 0, 4},
                                         {"", 0, 0, 1}}) {
    const MachineLoad m = machine_load(c.loadavg, c.cores);
    EXPECT_EQ(m.busy, c.busy) << "'" << c.loadavg << "' on " << c.cores << " cores";
    EXPECT_EQ(automatic_thread_count(m), c.threads) << "'" << c.loadavg << "' on " << c.cores << " cores";
  }
  const MachineLoad here = machine_load();
  EXPECT_GE(here.cores, 1);
  EXPECT_GE(here.busy, 0);
  EXPECT_LT(here.busy, here.cores);
}

}  // namespace
}  // namespace specdec
