// Configuring specdec with a flag the exactness contract forbids fails, naming the flag; checked
// for the host compilers' and nvcc's flags, also when they come from the environment. (The check runs before any
// package is looked for, so each configure here ends within a second.)
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace {

struct Result {
  int status;
  std::string output;
};

Result configure_with(const std::string& env, const std::string& args) {
  // One directory per process: ctest runs these cases side by side, and two configures in one
  // build directory break each other.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("specdec_forbidden_flags_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string cmd = env + " " + SPECDEC_CMAKE + " -S " + SPECDEC_SOURCE_DIR + " -B " + dir.string() + " " + args +
                          " 2>&1";
  Result r{-1, ""};
  if (FILE* p = popen(cmd.c_str(), "r")) {
    std::array<char, 4096> buf{};
    while (fgets(buf.data(), buf.size(), p)) r.output += buf.data();
    r.status = pclose(p);
  }
  std::filesystem::remove_all(dir);
  return r;
}

TEST(ForbiddenFlags, FastMathInTheHostFlagsFailsTheConfigure) {
  const Result r = configure_with("", "-DCMAKE_CXX_FLAGS='-O2 -ffast-math'");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("CMAKE_CXX_FLAGS contains -ffast-math"), std::string::npos) << r.output;
}

TEST(ForbiddenFlags, NvccFastMathAndContractionFailTheConfigure) {
  Result r = configure_with("", "-DCMAKE_CUDA_FLAGS=--use_fast_math");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("CMAKE_CUDA_FLAGS contains --use_fast_math"), std::string::npos) << r.output;
  r = configure_with("", "-DCMAKE_CUDA_FLAGS_RELEASE=--fmad=true");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("CMAKE_CUDA_FLAGS_RELEASE contains --fmad=true"), std::string::npos) << r.output;
}

TEST(ForbiddenFlags, FlagsFromTheEnvironmentAreCaughtToo) {
  const Result r = configure_with("CXXFLAGS=-Ofast", "");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("CMAKE_CXX_FLAGS contains -Ofast"), std::string::npos) << r.output;
}

}  // namespace
