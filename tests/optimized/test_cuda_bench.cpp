// specdec_cuda_bench, run as a program on the CPU grid emulator at a small shape: it measures the
// copy bandwidth, decode and every verify size, and refuses bad options with exit code 2; without
// a GPU, the default device is refused with exit code 1 and the reason.
#include <gtest/gtest.h>

#include <string>

#include "tests/optimized/program_run.hpp"

namespace {

using specdec::testing::ProgramRun;

ProgramRun run(const std::string& args) { return specdec::testing::run_program(SPECDEC_CUDA_BENCH, args); }

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

TEST(CudaBench, MeasuresDecodeAndEveryVerifySizeOnTheEmulator) {
  const ProgramRun r = run("--device emulator --shapes llama-4m-draft --context 8 --tokens 2 --reps 1 --copy-mib 1 --max-verify 4");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "device: CPU grid emulator")) << r.output;
  EXPECT_TRUE(has(r.output, "copy bandwidth ")) << r.output;
  EXPECT_TRUE(has(r.output, "llama-4m-draft BF16: ")) << r.output;
  EXPECT_TRUE(has(r.output, "decode llama-4m-draft")) << r.output;
  for (const char* t : {"T=1 ", "T=2 ", "T=4 "}) EXPECT_TRUE(has(r.output, std::string("verify llama-4m-draft ") + t)) << t << "\n" << r.output;
  EXPECT_FALSE(has(r.output, "T=8 ")) << "--max-verify 4 stops at 4\n" << r.output;
}

TEST(CudaBench, RefusesBadOptions) {
  struct Case {
    std::string args, message;
  };
  for (const Case& c : {Case{"--device tpu", "--device 'tpu': expected gpu or emulator"},
                        Case{"--shapes llama-9b", "unknown model preset 'llama-9b'"},
                        Case{"--precision F64", "F64"},
                        Case{"--context 0", "--context '0': expected an integer from 1"},
                        Case{"--tokens", "--tokens: expected a value after it"},
                        Case{"--speed 3", "unknown option '--speed'"}}) {
    const ProgramRun r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.output;
    EXPECT_TRUE(has(r.output, c.message)) << c.args << "\n" << r.output;
  }
}

TEST(CudaBench, WithoutAGpuSaysWhy) {
  const ProgramRun r = run("--shapes llama-4m-draft --copy-mib 1");
  if (r.code == 0) GTEST_SKIP() << "a GPU is present: " << r.output;
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "specdec_cuda_bench: ")) << r.output;
  EXPECT_TRUE(has(r.output, "cuda") || has(r.output, "CUDA")) << r.output;
}

}  // namespace
