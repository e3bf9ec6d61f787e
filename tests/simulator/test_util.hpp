#pragma once
// Shared helpers for the simulator tests.
#include <atomic>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "reference/core/error.hpp"

#include "simulator/predictor.hpp"
#include "simulator/spec_library.hpp"

namespace specdec::sim::test {

inline std::filesystem::path source_dir() { return std::filesystem::path(SPECDEC_SOURCE_DIR); }

// A fresh, empty directory under the system temp dir, removed on destruction.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> n{0};
    path_ = std::filesystem::temp_directory_path() /
            ("specdec_sim_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Runs f and returns the specdec::Error message ("" if nothing was thrown).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A scenario from the bundled specs: `drafter` empty = sequential; i.i.d. acceptance `alpha`; a
// short workload (prompt 128, output 2) so contexts stay small; the hardware kind's default engine.
inline Scenario scenario(const std::string& model, const std::string& hw, const std::string& drafter, int k, double alpha) {
  SpecLibrary lib;
  Scenario s;
  s.target = lib.model(model);
  s.hardware = lib.hardware(hw);
  s.engine = lib.engine_for("", s.hardware);
  if (!drafter.empty()) {
    s.drafter = lib.drafter(drafter, s.target);
    s.plan.method = s.drafter->method;
    s.plan.k = k;
    s.acceptance = iid_acceptance(alpha);
  }
  s.workload.prompt_len = 128;
  s.workload.output_len = 2;
  return s;
}

}  // namespace specdec::sim::test
