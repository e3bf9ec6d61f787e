#pragma once
// Runs the specdec command line in-process, with its output and errors captured.
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"

namespace specdec::testing {

struct CliRun {
  int code;
  std::string out, err;
};

inline CliRun run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  cli::CommandIO io{out, err, false};
  const int code = cli::run_cli(args, io);
  return {code, out.str(), err.str()};
}

}  // namespace specdec::testing
