// Every golden trace (traces/golden/, recorded by scripts/record_golden.sh on the bundled models)
// replays through `specdec validate --trace` on the reference backend and on the optimized CPU
// backend: identical tokens, drafts, trees and per-step decisions, logits within the tolerance
// policy. The traces name their models relative to the repository root.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "reference/core/error.hpp"
#include "traces/trace.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = SPECDEC_SOURCE_DIR;

std::vector<fs::path> golden_traces() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kRoot / "traces" / "golden")) {
    if (e.path().extension() == ".h5") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A recorded model path, relative to the repository root, made absolute.
std::string in_repo(const std::string& recorded) {
  const fs::path p(recorded);
  return p.is_absolute() ? recorded : (kRoot / p).string();
}

TEST(GoldenTraces, CoverEveryMethodDomainAndSamplingMode) {
  const std::vector<fs::path> traces = golden_traces();
  for (const char* method : {"sequential", "draft", "eagle-chain", "eagle-dynamic", "eagle3-chain", "peagle-chain",
                             "peagle-tree", "mtp-chain", "mtp-dynamic", "medusa-chain", "medusa-tree"}) {
    for (const char* domain : {"prose", "code"}) {
      for (const char* mode : {"greedy", "coupled", "sample"}) {
        const std::string name = std::string(method) + "_" + domain + "_" + mode + ".h5";
        EXPECT_TRUE(fs::exists(kRoot / "traces" / "golden" / name)) << "missing golden trace " << name;
      }
    }
  }
  EXPECT_EQ(traces.size(), 66u);
}

// Recorded under this build's exactness contract; otherwise scripts/record_golden.sh re-records them.
TEST(GoldenTraces, CarryThisBuildsExactnessContract) {
  for (const fs::path& path : golden_traces()) {
    const Trace trace = read_trace(path);
    try {
      check_exactness_contract(trace, path.string());
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

class GoldenReplay : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenReplay, EveryTraceReplaysExactly) {
  const std::string backend = GetParam();
  for (const fs::path& path : golden_traces()) {
    const Trace trace = read_trace(path);
    ASSERT_TRUE(trace.meta.models.count("target")) << path.filename() << " names no target model";
    std::vector<std::string> args = {"validate", "--trace", path.string(), "--backend", backend, "--model",
                                     in_repo(trace.meta.models.at("target").path)};
    if (trace.meta.models.count("drafter")) {
      args.push_back("--drafter");
      args.push_back(in_repo(trace.meta.models.at("drafter").path));
    }
    std::ostringstream out, err;
    cli::CommandIO io{out, err, false};
    const int code = cli::run_cli(args, io);
    EXPECT_EQ(code, 0) << path.filename() << " on the " << backend << " backend:\n" << out.str() << err.str();
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, GoldenReplay, ::testing::Values("reference", "cpu"));

}  // namespace
}  // namespace specdec
