// The choice of kernel path (optimized/cpu/cpu_isa.hpp): names, what this CPU supports, refusals
// that say what is missing, and SPECDEC_CPU_ISA through the specdec program as a user sets it —
// every path this machine runs gives the same tokens, and generate --json says which ran.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "optimized/cpu/cpu_isa.hpp"
#include "reference/core/error.hpp"
#include "tests/optimized/cpu_fixtures.hpp"
#include "tests/optimized/program_run.hpp"

namespace specdec {
namespace {

using cpu::Isa;

TEST(CpuIsa, NamesRoundTripAndUnknownNamesAreRefused) {
  for (Isa isa : cpu::kAllIsas) EXPECT_EQ(cpu::parse_isa(cpu::isa_name(isa)), isa) << cpu::isa_name(isa);
  for (const char* bad : {"", "AVX2", "avx", "avx-512", "sse"}) EXPECT_FALSE(cpu::parse_isa(bad).has_value()) << bad;
}

TEST(CpuIsa, PortableAlwaysRunsAndTheBestPathIsSupported) {
  EXPECT_TRUE(cpu::isa_supported(Isa::portable));
  EXPECT_EQ(cpu::isa_unsupported_reason(Isa::portable), "");
  EXPECT_TRUE(cpu::isa_supported(cpu::best_isa()));
  // Paths are nested: a CPU that runs avx512 runs avx2.
  if (cpu::isa_supported(Isa::avx512)) EXPECT_TRUE(cpu::isa_supported(Isa::avx2));
}

TEST(CpuIsa, AnUnsupportedPathIsRefusedNamingWhatIsMissing) {
  testing::SettingsGuard guard;
  int refused = 0;
  for (Isa isa : cpu::kAllIsas) {
    if (cpu::isa_supported(isa)) {
      EXPECT_NO_THROW(cpu::set_isa(isa));
      EXPECT_EQ(cpu::active_isa(), isa);
      continue;
    }
    ++refused;
    const std::string reason = cpu::isa_unsupported_reason(isa);
    EXPECT_NE(reason.find("this CPU lacks"), std::string::npos) << reason;
    try {
      cpu::set_isa(isa);
      ADD_FAILURE() << cpu::isa_name(isa) << ": accepted on a CPU that cannot run it";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    }
  }
  if (refused == 0) GTEST_SKIP() << "this CPU runs every path (portable, avx2, avx512): no refusal to show here";
}

const std::string kBin = SPECDEC_BIN;
const std::string kRoot = SPECDEC_SOURCE_DIR;

testing::ProgramRun generate_with(const std::string& isa) {
  return testing::run_program("SPECDEC_CPU_ISA=" + isa + " " + kBin,
                              "generate --model " + kRoot + "/models/target --backend cpu --prompt-ids 0,5,6 "
                              "--max-new-tokens 6 --ignore-eos --json");
}

TEST(CpuIsaVariable, EveryRunnablePathGivesTheSameTokensAndSaysWhichRan) {
  nlohmann::json first;
  for (Isa isa : cpu::kAllIsas) {
    const testing::ProgramRun r = generate_with(cpu::isa_name(isa));
    if (!cpu::isa_supported(isa)) {
      EXPECT_NE(r.code, 0) << cpu::isa_name(isa) << ": " << r.output;
      EXPECT_NE(r.output.find(cpu::isa_unsupported_reason(isa)), std::string::npos) << r.output;
      continue;
    }
    ASSERT_EQ(r.code, 0) << cpu::isa_name(isa) << ": " << r.output;
    const auto j = nlohmann::json::parse(r.output);
    EXPECT_EQ(j["timing"]["cpu_isa"], cpu::isa_name(isa));
    if (first.is_null()) {
      first = j["output_tokens"];
      EXPECT_EQ(first.size(), 6u);
    } else {
      EXPECT_EQ(j["output_tokens"], first) << "path " << cpu::isa_name(isa);
    }
  }
  // Unset (or empty): the widest path this CPU runs.
  const testing::ProgramRun r = generate_with("");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output)["timing"]["cpu_isa"], cpu::isa_name(cpu::best_isa()));
}

TEST(CpuIsaVariable, AnUnknownPathIsAClearError) {
  const testing::ProgramRun r = generate_with("avx1024");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("SPECDEC_CPU_ISA='avx1024' is not a cpu kernel path: expected portable, avx2 or avx512"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace specdec
