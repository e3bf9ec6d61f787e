// Sweeps: speed, output formats (CSV and HDF5 readable by h5py), invalid combinations skipped.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "simulator/sweep.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

SweepSpec big_spec() {
  SweepSpec s;
  s.hardware = {"a100-80gb-sxm", "h100-sxm", "h200", "b200", "trn1-32xlarge"};
  s.models = {"llama-3.1-8b", "llama-3.1-70b"};
  s.drafters = {"none", "eagle1-llama3-8b", "eagle3-llama3.1-8b", "eagle3-llama3.3-70b", "draft-llama-3.2-1b"};
  s.ks = {1, 2, 3, 4, 5, 6, 7, 8};
  s.batches = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
  s.tps = {1, 8};
  s.alphas = {0.5, 0.6, 0.7, 0.8, 0.9};
  return s;
}

TEST(Sweep, HundredThousandScenariosInSeconds) {
  SweepSpec s = big_spec();
  s.alphas = {0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95};
  s.output_lens = {128, 256, 512};
  size_t n = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const SweepSummary sum = run_sweep(s, SpecLibrary(), [&](const SweepRow&) { ++n; });
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(n, sum.scenarios);
  EXPECT_GE(n, 100000u);
  EXPECT_LT(secs, 60.0) << n << " scenarios took " << secs << " s";
  std::cout << "[ sweep    ] " << n << " scenarios in " << secs << " s\n";
  EXPECT_GT(sum.skipped, 0u) << "EAGLE heads for the other model size cannot resolve";
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
  EXPECT_EQ(header.substr(0, 30), "hardware,model,drafter,method,");
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

}  // namespace
}  // namespace specdec::sim
