#pragma once
// Running the specdec binary (or any shell line) in a child process with a hard timeout, for cases
// that crashed or hung before their fix: a regression then fails its test instead of the suite.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/reference/scratch_dir.hpp"

namespace specdec::testing {

inline std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Child {
  int code;  // exit status; 128 + signal when killed by a signal (as a shell reports it)
  std::string out, err;
};

// Runs `shell` (bash) in a child process with a hard timeout (SIGKILL), capturing its output.
inline Child run_shell(const std::string& shell, const ScratchDir& dir, int timeout_s = 60) {
  const std::filesystem::path out = dir / ".child.out", err = dir / ".child.err";
  const std::string cmd = "timeout -s KILL " + std::to_string(timeout_s) + " bash -c " + quoted(shell) + " >" +
                          quoted(out.string()) + " 2>" + quoted(err.string());
  const int status = std::system(cmd.c_str());
  Child c{WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), slurp(out), slurp(err)};
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return c;
}

#ifdef SPECDEC_BINARY
inline std::string specdec_cmd(const std::string& args) { return quoted(SPECDEC_BINARY) + " " + args; }
#endif

}  // namespace specdec::testing
