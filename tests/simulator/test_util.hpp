#pragma once
// Shared helpers for the simulator tests.
#include <atomic>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "reference/core/error.hpp"

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

}  // namespace specdec::sim::test
