#pragma once
// Runs one of the project's programs as a user would, for the tests of the tools in
// optimized/tools: the exit code and everything it printed.
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace specdec::testing {

struct ProgramRun {
  int code;
  std::string output;  // stdout and stderr
};

inline ProgramRun run_program(const std::string& program, const std::string& args) {
  const std::string command = program + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace specdec::testing
