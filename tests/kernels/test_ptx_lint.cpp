// The PTX of every kernel follows the exactness contract, and the lint itself catches each kind of
// violation: planted ones in a kernel compiled with fast-math, and hand-written lines.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/kernels/ptx_lint.hpp"

namespace specdec::kernels {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, sep);)
    if (!part.empty()) out.push_back(part);
  return out;
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f) << "cannot read " << path;
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(PtxLint, EveryKernelFollowsTheContract) {
  const std::vector<std::string> files = split(SPECDEC_KERNEL_PTX, '|');
  ASSERT_FALSE(files.empty());
  for (const std::string& file : files) {
    const std::string ptx = read(file);
    ASSERT_NE(ptx.find(".entry"), std::string::npos) << file << " holds no kernel";
    EXPECT_NE(ptx.find("add.rn.f32"), std::string::npos) << file;
    EXPECT_NE(ptx.find("// exact::fma"), std::string::npos) << file << ": the dot products' fused multiply-adds are missing";
    for (const PtxFinding& f : ptx_lint(ptx)) ADD_FAILURE() << file << ":" << f.line << ": " << f.instruction << ": " << f.why;
  }
}

TEST(PtxLint, CatchesThePlantedViolations) {
  const std::vector<PtxFinding> found = ptx_lint(read(SPECDEC_PLANTED_PTX));
  auto count = [&found](const std::string& why) {
    int n = 0;
    for (const PtxFinding& f : found) n += f.why.find(why) != std::string::npos;
    return n;
  };
  EXPECT_GT(count("contraction"), 0);
  EXPECT_GT(count("approximate"), 0);
  EXPECT_GT(count("flushes"), 0);
}

TEST(PtxLint, JudgesSingleInstructions) {
  auto lint = [](const std::string& line) { return ptx_lint("\t" + line + ";\n").size(); };
  EXPECT_EQ(lint("add.rn.f32 %f1, %f2, %f3"), 0u);
  EXPECT_EQ(lint("@%p1 mul.rn.f32 %f1, %f2, %f3"), 0u);
  EXPECT_EQ(lint("add.s32 %r1, %r2, %r3"), 0u);
  EXPECT_EQ(lint("sqrt.rn.f32 %f1, %f2"), 0u);
  EXPECT_EQ(lint("add.f32 %f1, %f2, %f3"), 1u);
  EXPECT_EQ(lint("@!%p2 sub.f64 %fd1, %fd2, %fd3"), 1u);
  EXPECT_EQ(lint("div.full.f32 %f1, %f2, %f3"), 1u);
  EXPECT_EQ(lint("fma.rn.f32 %f1, %f2, %f3, %f4"), 1u);
  EXPECT_EQ(lint("fma.rn.f32 %f1, %f2, %f3, %f4; // exact::fma"), 0u);
  EXPECT_EQ(lint("fma.rn.ftz.f32 %f1, %f2, %f3, %f4; // exact::fma"), 2u);
  EXPECT_EQ(lint("mad.rn.f32 %f1, %f2, %f3, %f4"), 1u);
  EXPECT_EQ(lint("ex2.approx.ftz.f32 %f1, %f2"), 2u);
  EXPECT_EQ(lint("add.rn.ftz.f32 %f1, %f2, %f3"), 1u);
  EXPECT_EQ(lint("// add.f32 in a comment"), 0u);
}

}  // namespace
}  // namespace specdec::kernels
