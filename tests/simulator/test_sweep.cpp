// Sweeps: every combination predicted or skipped, output formats (CSV and HDF5 readable by h5py), invalid combinations skipped.
#include <gtest/gtest.h>

#include <map>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "simulator/sweep.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

// Every combination is predicted once or skipped with a reason: sequential decoding once per
// workload, each drafter × K × alpha otherwise; a drafter that does not fit a model is skipped
// once per (hardware, model), a tp beyond the instance once per workload. (The sweep's speed is
// a benchmark: docs/simulator.md, "Sweeps".)
TEST(Sweep, EveryCombinationIsPredictedOrSkipped) {
  SweepSpec s;
  s.hardware = {"h100-sxm", "b200"};
  s.models = {"llama-3.1-8b", "llama-3.1-70b"};
  s.drafters = {"none", "eagle1-llama3-8b", "draft-llama-3.2-1b"};
  s.ks = {1, 4};
  s.batches = {1, 8};
  s.tps = {1, 8, 16};
  s.alphas = {0.6, 0.8};
  size_t n = 0, sequential = 0;
  std::map<std::string, size_t> by_model;
  const SweepSummary sum = run_sweep(s, SpecLibrary(), [&](const SweepRow& r) {
    ++n;
    sequential += r.method == "sequential";
    ++by_model[r.model];
    EXPECT_GT(r.prediction.tpot_s, 0) << r.hardware << " " << r.model << " " << r.drafter << " K=" << r.k;
  });
  EXPECT_EQ(n, sum.scenarios);
  // 2 hardware × 2 models × tp {1, 8} × 2 batches = 16 workloads, each with one sequential row;
  // the 8B target takes both drafters (2 × 2 K × 2 alphas), the 70B only the draft model.
  EXPECT_EQ(sequential, 16u);
  EXPECT_EQ(by_model["llama-3.1-8b"], 8u * 9u);
  EXPECT_EQ(by_model["llama-3.1-70b"], 8u * 5u);
  EXPECT_EQ(sum.skipped, 2u + 8u) << "the 8B EAGLE-1 head on the 70B target (per hardware), tp 16 (per workload)";
  ASSERT_EQ(sum.skip_reasons.size(), 3u) << "distinct reasons: the head's, and tp 16 on each hardware by name";
}

// A head is priced on the model it was trained for; another model of the same shape (Llama-3-8B
// for the Llama-3.1-8B EAGLE-3 head) is skipped with the reason unless any_target. A draft LM
// pairs with any model of its vocabulary.
TEST(Sweep, HeadsArePairedWithTheirTargetUnlessAnyTarget) {
  SweepSpec s;
  s.hardware = {"h100-sxm"};
  s.models = {"llama-3.1-8b", "llama-3-8b"};
  s.drafters = {"eagle3-llama3.1-8b", "draft-llama-3.2-1b"};
  s.ks = {2};
  std::map<std::string, std::vector<std::string>> priced;  // model -> drafters
  auto collect = [&](const SweepRow& r) { priced[r.model].push_back(r.drafter); };
  SweepSummary sum = run_sweep(s, SpecLibrary(), collect);
  EXPECT_EQ(priced["llama-3.1-8b"], (std::vector<std::string>{"eagle3-llama3.1-8b", "draft-llama-3.2-1b"}));
  EXPECT_EQ(priced["llama-3-8b"], (std::vector<std::string>{"draft-llama-3.2-1b"}));
  ASSERT_EQ(sum.skipped, 1u);
  EXPECT_EQ(sum.skip_reasons.at(0),
            "drafter 'eagle3-llama3.1-8b' is trained for 'llama-3.1-8b', not 'llama-3-8b' (pair it with another model "
            "with --any-target)");
  priced.clear();
  s.any_target = true;
  sum = run_sweep(s, SpecLibrary(), collect);
  EXPECT_EQ(sum.skipped, 0u);
  EXPECT_EQ(priced["llama-3-8b"], (std::vector<std::string>{"eagle3-llama3.1-8b", "draft-llama-3.2-1b"}));
}

// A drafter that does not fit one model is skipped for it; a drafter name with no spec is an error
// before anything is priced, as an unknown model is.
TEST(Sweep, UnknownDrafterIsAnError) {
  SweepSpec s;
  s.hardware = {"h100-sxm"};
  s.models = {"llama-3.1-8b"};
  s.drafters = {"none", "eagle3-llama3.1-8", "eagle3-llama3.1-8b"};
  s.ks = {2};
  size_t rows = 0;
  const std::string e = test::error_of([&] { run_sweep(s, SpecLibrary(), [&](const SweepRow&) { ++rows; }); });
  EXPECT_NE(e.find("unknown drafters spec 'eagle3-llama3.1-8'"), std::string::npos) << e;
  EXPECT_EQ(rows, 0u);
}

TEST(Sweep, CsvAndHdf5) {
  SweepSpec s;
  s.hardware = {"h100-sxm"};
  s.models = {"llama-3.1-8b"};
  s.drafters = {"none", "eagle3-llama3.1-8b"};
  s.ks = {2, 4};
  s.alphas = {0.7};
  std::vector<SweepRow> rows;
  const SweepSummary sum = run_sweep(s, SpecLibrary(), [&](const SweepRow& r) { rows.push_back(r); });
  ASSERT_EQ(rows.size(), 3u) << "one sequential row, two EAGLE-3 rows";
  EXPECT_EQ(sum.skipped, 0u);
  EXPECT_EQ(rows[0].method, "sequential");
  EXPECT_EQ(rows[0].k, 0);
  test::TempDir dir;
  write_sweep(dir.path() / "out.csv", rows);
  std::ifstream in(dir.path() / "out.csv");
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header.substr(0, 37), "hardware,engine,model,drafter,method,");
  int lines = 0;
  while (std::getline(in, line)) ++lines;
  EXPECT_EQ(lines, 3);
  write_sweep(dir.path() / "out.h5", rows);
  const std::string cmd = std::string(SPECDEC_PYTHON) +
                          " -c \"import h5py,sys; f=h5py.File(sys.argv[1]); "
                          "assert f['method'][0].decode()=='sequential', f['method'][0]; "
                          "assert abs(f['tpot_ms'][1]-" +
                          std::to_string(rows[1].prediction.tpot_s * 1e3) + ")<1e-3; assert len(f['k'])==3\" " +
                          (dir.path() / "out.h5").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_NE(test::error_of([&] { write_sweep(dir.path() / "out.xlsx", rows); }).find("unknown extension"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { write_sweep(dir.path() / "missing" / "out.csv", rows); }).find("does not exist"),
            std::string::npos);
  // Nothing half-written is left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 2);
}

// Layouts: each TP's attention DP x EP combinations are rows of their own (and columns of the files),
// each equal to the one prediction of that layout; what the engines do not run is skipped with its
// reason; the pivot names the layout.
TEST(Sweep, LayoutsAreSweptAndInvalidOnesSkipped) {
  SweepSpec s;
  s.hardware = {"h200"};
  s.models = {"deepseek-v3", "llama-3.1-70b"};
  s.drafters = {"none"};
  s.tps = {8};
  s.dp_attentions = {1, 8, 3};
  s.eps = {1, 8};
  s.batches = {16};
  std::vector<SweepRow> rows;
  const SweepSummary sum = run_sweep(s, SpecLibrary(), [&](const SweepRow& r) { rows.push_back(r); });
  // DeepSeek-V3: D in {1, 8} x P in {1, 8}; D = 3 does not divide 8. Llama-3.1-70B (dense): D in {1, 8}
  // with P = 1; EP on a dense model and D = 3 are skipped.
  ASSERT_EQ(rows.size(), 6u) << sum.skipped;
  EXPECT_EQ(sum.skipped, 6u);
  bool said_divides = false, said_dense = false;
  for (const auto& r : sum.skip_reasons) {
    said_divides = said_divides || r.find("does not divide") != std::string::npos;
    said_dense = said_dense || r.find("dense") != std::string::npos;
  }
  EXPECT_TRUE(said_divides && said_dense) << ::testing::PrintToString(sum.skip_reasons);
  for (const SweepRow& r : rows) {
    Scenario one = test::scenario(r.model, "h200", "", 1, 0);
    one.workload.batch = 16;
    one.workload.tp = 8;
    one.workload.prompt_len = r.prompt_len;
    one.workload.output_len = r.output_len;
    one.workload.dp_attention = r.dp_attention;
    one.workload.ep = r.ep;
    EXPECT_EQ(r.prediction.tpot_s, predict(one, false).tpot_s) << r.model << " D " << r.dp_attention << " P " << r.ep;
    const nlohmann::json j = sweep_row_json(r);
    EXPECT_EQ(j["dp_attention"], r.dp_attention);
    EXPECT_EQ(j["ep"], r.ep);
  }
  // The layouts differ in cost: DP 8 x EP 8 is not priced as plain TP 8.
  EXPECT_NE(rows[0].prediction.tpot_s, rows[3].prediction.tpot_s);
  std::ostringstream csv;
  write_sweep_csv(csv, rows);
  EXPECT_NE(csv.str().find(",k,batch,tp,dp_attention,ep,prompt_len,"), std::string::npos) << csv.str().substr(0, 200);
}

// The pivot: one table per configuration, K down and batch across, cells the rows' speedups, the
// best K of each batch starred; a MoE target whose speedup grows with batch is explained.
TEST(Sweep, PivotTablesShowEveryRowsSpeedup) {
  SweepSpec s;
  s.hardware = {"h100-sxm"};
  s.models = {"llama-3.1-8b", "qwen3-30b-a3b"};
  s.drafters = {"none", "eagle3-llama3.1-8b", "eagle3-qwen3-30b-a3b"};
  s.ks = {1, 2, 4};
  s.batches = {1, 32, 128};
  s.alphas = {0.8};
  std::vector<SweepRow> rows;
  run_sweep(s, SpecLibrary(), [&](const SweepRow& r) { rows.push_back(r); });
  std::ostringstream out;
  write_sweep_pivot(out, rows);
  const std::string text = out.str();
  for (const auto& r : rows) {
    if (r.method == "sequential") continue;
    std::ostringstream cell;
    cell << std::fixed << std::setprecision(2) << r.prediction.speedup;
    EXPECT_NE(text.find(cell.str()), std::string::npos) << r.model << " " << r.drafter << " K=" << r.k << " batch " << r.batch;
  }
  EXPECT_NE(text.find("h100-sxm / vllm, llama-3.1-8b, eagle3-llama3.1-8b (eagle3), alpha 0.8, TP 1"), std::string::npos) << text;
  // Batch 1's best K of the first table is starred.
  const SweepRow* best = nullptr;
  for (const auto& r : rows)
    if (r.method != "sequential" && r.model == "llama-3.1-8b" && r.drafter == "eagle3-llama3.1-8b" && r.batch == 1 &&
        (!best || r.prediction.speedup > best->prediction.speedup))
      best = &r;
  ASSERT_NE(best, nullptr);
  std::ostringstream starred;
  starred << std::left << std::setw(16) << ("K = " + std::to_string(best->k)) << std::right << std::setw(9)
          << [&] { std::ostringstream v; v << std::fixed << std::setprecision(2) << best->prediction.speedup << "*"; return v.str(); }();
  EXPECT_NE(text.find(starred.str()), std::string::npos) << "batch 1's best K starred ('" << starred.str() << "'):\n" << text;
  // Dense target: no explanation; the MoE target's speedup rises from batch 1 to 128, said once per such table.
  const size_t first_moe = text.find("qwen3-30b-a3b, eagle3");
  ASSERT_NE(first_moe, std::string::npos) << text;
  EXPECT_EQ(text.substr(0, first_moe).find("a MoE target"), std::string::npos) << text;
  EXPECT_NE(text.find("a MoE target: the speedup grows with batch", first_moe), std::string::npos) << text;
  std::ostringstream few;
  write_sweep_pivot(few, rows, 1);
  EXPECT_NE(few.str().find("(1 more table in the file)"), std::string::npos)
      << "each head priced on its own target: two tables\n" << few.str();
  write_sweep_pivot(few, rows, 0);
  EXPECT_NE(few.str().find("(2 more tables in the file)"), std::string::npos) << few.str();
}

}  // namespace
}  // namespace specdec::sim
