#pragma once
// What every fuzz harness shares: the input written to a file (the readers under test take
// paths), and the rule that a bad input must end in specdec::Error — any other exception, a crash,
// a sanitizer report or a hang is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include "reference/core/error.hpp"

namespace specdec::fuzz {

// A per-process scratch file (in /dev/shm when there is one: no disk traffic per execution).
inline std::filesystem::path input_file(const char* harness, const char* suffix) {
  const std::filesystem::path dir = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
  return dir / ("specdec-fuzz-" + std::string(harness) + "-" + std::to_string(::getpid()) + suffix);
}

inline void write_input(const std::filesystem::path& p, const uint8_t* data, std::size_t size) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) {
    std::fprintf(stderr, "fuzz harness: cannot write %s\n", p.c_str());
    std::abort();
  }
}

// Runs `body`; a specdec::Error is the expected outcome of a bad input, anything else aborts.
template <class F> void expect_clean(const char* harness, F&& body) {
  try {
    body();
  } catch (const Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: finding: an exception other than specdec::Error escaped: %s\n", harness, e.what());
    std::abort();
  }
}

// A property the harness checks (e.g. a round trip); its failure is a finding.
inline void require(bool ok, const char* harness, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "%s: finding: %s\n", harness, what.c_str());
    std::abort();
  }
}

}  // namespace specdec::fuzz
