// specdec simulate: the command's modes end to end, through run_simulate.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "experiments/cli/cli.hpp"
#include "simulator/hardware_spec.hpp"
#include "simulator/spec_json.hpp"
#include "test_util.hpp"

namespace specdec::cli {
namespace {

struct CommandRun {
  int code = 0;
  std::string out, err;
};

CommandRun simulate(std::vector<std::string> args) {
  std::ostringstream out, err;
  CommandIO io{out, err};
  CommandRun r;
  r.code = run_simulate(args, io);
  r.out = out.str();
  r.err = err.str();
  return r;
}

TEST(SimulateCommand, HelpAndTable) {
  EXPECT_NE(simulate({"--help"}).out.find("usage: specdec simulate"), std::string::npos);
  const CommandRun r = simulate({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "eagle3-llama3.1-8b", "--k",
                          "4", "--alpha", "0.8", "--breakdown"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("TPOT"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("speedup"), std::string::npos);
  EXPECT_NE(r.out.find("draft lm_head"), std::string::npos) << "per-operator breakdown: " << r.out;
  EXPECT_NE(r.out.find("verify attention"), std::string::npos);
}

TEST(SimulateCommand, JsonBestKAndCapacity) {
  const CommandRun r = simulate({"--model", "llama-2-70b", "--hardware", "trn1-32xlarge", "--tp", "32", "--drafter",
                          "draft-llama-2-7b", "--alpha", "0.75", "--best-k", "8", "--json", "--capacity-rate", "2",
                          "--tpot-target-ms", "50"});
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["by_k"].size(), 8u);
  const int best = j["best_k"];
  for (const auto& row : j["by_k"]) EXPECT_GE(row["tpot_ms"].get<double>(), j["prediction"]["tpot_ms"].get<double>() - 1e-12);
  EXPECT_EQ(j["prediction"]["k"], best);
  EXPECT_TRUE(j["capacity"]["feasible"].get<bool>());
  EXPECT_EQ(j["capacity"]["devices"].get<int>() % 32, 0);
  EXPECT_GT(j["capacity"]["cost_per_million_output_tokens_usd"].get<double>(), 0);
}

TEST(SimulateCommand, TreesAndAcceptanceOptions) {
  auto tpot = [](std::vector<std::string> extra) {
    std::vector<std::string> a = {"--model", "vicuna-7b", "--hardware", "a100-80gb-sxm", "--drafter", "eagle1-vicuna-7b", "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    return nlohmann::json::parse(simulate(a).out)["prediction"];
  };
  const auto tree = tpot({"--tree", "mc_sim_7b_63", "--tree-acceptance", "[[0.7,0.2,0.1,0.1],[0.7,0.2,0.1],[0.7,0.2,0.1],[0.7,0.2],[0.7,0.2]]"});
  EXPECT_EQ(tree["tree_nodes"], 25);
  const auto dyn = tpot({"--dynamic-tree", "26,5,4", "--tree-acceptance", "[[0.7,0.2,0.1,0.1],[0.7,0.2,0.1],[0.7,0.2,0.1],[0.7,0.2],[0.7,0.2]]"});
  EXPECT_GE(dyn["acceptance_length"].get<double>(), tree["acceptance_length"].get<double>() - 1e-12);
  const auto vec = tpot({"--k", "3", "--acceptance", "0.9,0.8,0.7"});
  EXPECT_NEAR(vec["acceptance_length"].get<double>(), 1 + 0.9 + 0.72 + 0.504, 1e-12);
  const auto table = tpot({"--k", "3", "--acceptance-table", "3:2.5"});
  EXPECT_DOUBLE_EQ(table["acceptance_length"].get<double>(), 2.5);
}

TEST(SimulateCommand, UserErrors) {
  using test = std::vector<std::string>;
  auto err = [](test args) { return sim::test::error_of([&] { simulate(args); }); };
  EXPECT_NE(err({"--hardware", "h100-sxm"}).find("--model is required"), std::string::npos);
  EXPECT_NE(err({"--model", "llama-9b", "--hardware", "h100-sxm"}).find("unknown models spec 'llama-9b'"), std::string::npos);
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "eagle3-llama3.1-8b"})
                .find("needs an acceptance model"),
            std::string::npos);
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--k", "x"}).find("--k: 'x' is not a number"),
            std::string::npos);
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--tp", "16"}).find("exceeds the 8 devices"),
            std::string::npos);
  EXPECT_NE(err({"--bogus"}).find("unrecognised option"), std::string::npos);
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--drafter", "eagle3-llama3.1-8b", "--alpha", "0.5",
                 "--acceptance", "0.5"})
                .find("give one acceptance model"),
            std::string::npos);
  EXPECT_NE(err({"--model", "llama-3.1-8b", "--hardware", "h100-sxm", "--capacity-rate", "3"}).find("--tpot-target-ms"),
            std::string::npos);
}

// The README's simulate examples run as written: a documented command that fails is the first bug
// a user meets.
TEST(SimulateCommand, TheReadmeExamplesRun) {
  const std::string readme = std::string(SPECDEC_SOURCE_DIR) + "/README.md";
  std::ifstream in(readme);
  ASSERT_TRUE(in) << "cannot read " << readme;
  const std::string prefix = "build/specdec simulate ";
  int examples = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::istringstream words(line.substr(prefix.size(), line.find('#') - prefix.size()));
    std::vector<std::string> args;
    for (std::string w; words >> w;) args.push_back(w);
    ++examples;
    CommandRun r;
    EXPECT_EQ(sim::test::error_of([&] { r = simulate(args); }), "") << readme << ": " << line;
    EXPECT_EQ(r.code, 0) << readme << ": " << line << "\n" << r.err;
    EXPECT_NE(r.out.find("speedup"), std::string::npos) << line << "\n" << r.out;
  }
  EXPECT_GE(examples, 1) << readme << " has no '" << prefix << "' example";
}

TEST(SimulateCommand, SweepCalibrateAndMeasure) {
  sim::test::TempDir dir;
  const auto csv = (dir.path() / "sweep.csv").string();
  CommandRun r = simulate({"--sweep", csv, "--model", "llama-3.1-8b,llama-2-7b", "--hardware", "h100-sxm,b200", "--drafter",
                    "none,eagle3-llama3.1-8b", "--k", "1-4", "--batch", "1,8", "--alphas", "0.6,0.8"});
  EXPECT_NE(r.out.find("predicted"), std::string::npos);
  std::ifstream in(csv);
  int lines = 0;
  for (std::string l; std::getline(in, l);) ++lines;
  // 2 models × 2 hardware × 2 batches × (1 sequential + 4 K × 2 alphas) + header.
  EXPECT_EQ(lines, 2 * 2 * 2 * 9 + 1);

  const auto fitted = (dir.path() / "fitted.json").string();
  r = simulate({"--calibrate", (sim::test::source_dir() / "simulator/calibration/aws_trainium_trn1.json").string(),
                "--output", fitted});
  EXPECT_NE(r.out.find("largest error"), std::string::npos) << r.out;
  const sim::HardwareSpec h = sim::load_hardware_spec(fitted);
  EXPECT_EQ(h.name, "trn1-32xlarge");

  const auto cpu = (dir.path() / "cpu.json").string();
  r = simulate({"--measure-cpu", cpu, "--quick", "--threads", "1"});
  const sim::HardwareSpec c = sim::load_hardware_spec(cpu);
  EXPECT_EQ(c.kind, "cpu");
  EXPECT_GT(c.memory_bandwidth_bytes_per_s, 1e8);
  EXPECT_GT(c.peak_flops("fp32"), 1e8);
  EXPECT_TRUE(sim::read_json_file(cpu).contains("measured"));
  // The measured spec is usable at once.
  r = simulate({"--model", "vicuna-68m", "--hardware", cpu});
  EXPECT_NE(r.out.find("TPOT"), std::string::npos);
}

}  // namespace
}  // namespace specdec::cli
