// specdec_tile_throughput, run as a program: it measures every tile size in every memory level
// and refuses bad options with a message and exit code 2.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "tests/optimized/program_run.hpp"

namespace {

using specdec::testing::ProgramRun;

ProgramRun run(const std::string& args) { return specdec::testing::run_program(SPECDEC_TILE_THROUGHPUT, args); }

TEST(TileThroughput, MeasuresEveryTileSizeInEveryMemoryLevel) {
  for (const std::string dtype : {"F32", "BF16"}) {
    const ProgramRun r = run("--dtype " + dtype + " --cols 64 --seconds 0.005");
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find(" path, one thread, " + dtype + " weights, 64 columns"), std::string::npos) << r.output;
    std::istringstream lines(r.output);
    std::string line;
    int rows = 0;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      int tokens = 0;
      if (!(fields >> tokens)) continue;  // header lines
      ++rows;
      for (int place = 0; place < 4; ++place) {
        double macs = 0, gb = 0;
        std::string unit;
        ASSERT_TRUE(static_cast<bool>(fields >> macs >> gb >> unit)) << dtype << ": " << line;
        EXPECT_GT(macs, 0.0) << dtype << ": " << line;
        EXPECT_GT(gb, 0.0) << dtype << ": " << line;
      }
    }
    EXPECT_EQ(rows, 6) << r.output;  // T = 1, 2, 4, 8, 16, 32
  }
}

TEST(TileThroughput, RefusesBadOptions) {
  const struct {
    const char* args;
    const char* message;
  } cases[] = {
      {"--dtype Q8", "--dtype: 'Q8' is not F32, BF16 or F16"},
      {"--cols 3", "--cols: expected 8 to 65536"},
      {"--seconds 0", "--seconds: expected a value in (0, 60]"},
      {"--cols", "--cols needs a value"},
      {"--fast", "unknown option '--fast'"},
  };
  for (const auto& c : cases) {
    const ProgramRun r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << ": " << r.output;
  }
}

}  // namespace
