// --backend cuda end to end through the command line, on the CPU grid emulator
// (SPECDEC_CUDA_DEVICE=emulator, set before any test runs): generate equals the reference token
// for token, every golden trace replays exactly with the target and the drafter (draft LM or
// EAGLE head) on the device, and validate against the reference passes. On a machine without a GPU and without that variable, the backend is refused
// with a message that says why and what to do.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/backend.hpp"
#include "tests/cli/cli_runner.hpp"

namespace specdec {
namespace {

using testing::CliRun;
using testing::run;

// Set before main: the backend picks its device once per process.
const bool kEmulated = setenv("SPECDEC_CUDA_DEVICE", "emulator", 1) == 0;

const std::string kRoot = SPECDEC_SOURCE_DIR;

TEST(CudaBackend, GenerateEqualsTheReference) {
  ASSERT_TRUE(kEmulated);
  ASSERT_TRUE(backend_available("cuda"));
  auto tokens = [](const std::string& backend) {
    const CliRun r = run({"generate", "--model", kRoot + "/models/target", "--backend", backend, "--prompt", "And God said",
                          "--max-new-tokens", "8", "--ignore-eos", "--sampling", "coupled", "--temperature", "0.8", "--json"});
    EXPECT_EQ(r.code, 0) << backend << ": " << r.err;
    return nlohmann::json::parse(r.out.empty() ? "{}" : r.out)["output_tokens"];
  };
  const auto want = tokens("reference");
  EXPECT_EQ(want.size(), 8u);
  EXPECT_EQ(tokens("cuda"), want);
  // The text output says the device was emulated.
  const CliRun text = run({"generate", "--model", kRoot + "/models/target", "--backend", "cuda", "--prompt", "And", "--max-new-tokens", "1"});
  EXPECT_NE(text.out.find("backend cuda on the CPU grid emulator (SPECDEC_CUDA_DEVICE=emulator"), std::string::npos) << text.out;
}

// Every recorded golden trace, by name (sequential_prose_greedy, eagle3-chain_code_sample, ...);
// of MTP and Medusa the greedy ones (the emulated device costs seconds a trace; their coupled and
// sampled decoding on the device is test_cuda_batched's MtpAndMedusaEqualSequentialOnTheDevice).
std::vector<std::string> golden_traces() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(kRoot + "/traces/golden")) {
    const std::string name = e.path().stem().string();
    const bool newer_family = name.rfind("mtp", 0) == 0 || name.rfind("medusa", 0) == 0;
    if (e.path().extension() == ".h5" && (!newer_family || name.find("_greedy") != std::string::npos)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(CudaGoldenTraces, AreAllFound) { EXPECT_GE(golden_traces().size(), 40u) << "traces/golden holds fewer traces than recorded"; }

class CudaGoldenReplay : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaGoldenReplay, ReplaysExactly) {
  const std::string name = GetParam();
  std::vector<std::string> args = {"validate", "--trace", kRoot + "/traces/golden/" + name + ".h5", "--backend", "cuda",
                                   "--model", kRoot + "/models/target"};
  const std::string family = name.substr(0, name.find_first_of("_-"));
  // The bundled drafter of each family (the trace names it relative to the repository root).
  const std::map<std::string, std::string> drafters = {{"draft", "draft"}, {"eagle", "eagle1"}, {"eagle3", "eagle3"},
                                                       {"peagle", "peagle"}, {"mtp", "mtp"}, {"medusa", "medusa"}};
  if (const auto it = drafters.find(family); it != drafters.end()) args.insert(args.end(), {"--drafter", kRoot + "/models/" + it->second});
  const CliRun r = run(args);
  EXPECT_EQ(r.code, 0) << name << ":\n" << r.out << r.err;
}

INSTANTIATE_TEST_SUITE_P(Golden, CudaGoldenReplay, ::testing::ValuesIn(golden_traces()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(CudaBackend, ValidateAgainstTheReference) {
  const CliRun r = run({"validate", "--model", kRoot + "/models/target", "--backend", "cuda", "--against", "reference",
                        "--method", "draft", "--drafter", kRoot + "/models/draft", "--k", "3", "--prompt", "In the",
                        "--max-new-tokens", "8"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace specdec
