#pragma once
// Subcommand dispatch for the specdec command line. Each subcommand is a function from its
// arguments (without the program and subcommand names) to an exit code; user errors are thrown as
// specdec::Error and turned into a message on stderr and exit code 1 by run_cli.
#include <iosfwd>
#include <string>
#include <vector>

namespace specdec::cli {

struct CommandIO {
  std::ostream& out;
  std::ostream& err;
  bool out_is_terminal = false;  // colour and progress only on a terminal
  bool err_is_terminal = false;  // progress written to err (specdec batch) only on a terminal
};

using CommandFn = int (*)(const std::vector<std::string>& args, CommandIO& io);

struct Command {
  const char* name;
  const char* summary;
  CommandFn run;
};

const std::vector<Command>& commands();

// Full entry point: parses argv[1] as the subcommand. Returns the process exit code.
int run_cli(int argc, char** argv);
int run_cli(const std::vector<std::string>& args, CommandIO& io);

// Subcommands (one file each).
int run_generate(const std::vector<std::string>& args, CommandIO& io);
int run_compare(const std::vector<std::string>& args, CommandIO& io);
int run_explain(const std::vector<std::string>& args, CommandIO& io);
int run_record(const std::vector<std::string>& args, CommandIO& io);
int run_tokenize(const std::vector<std::string>& args, CommandIO& io);
int run_forward(const std::vector<std::string>& args, CommandIO& io);
int run_inspect(const std::vector<std::string>& args, CommandIO& io);
int run_init_model(const std::vector<std::string>& args, CommandIO& io);
int run_convert(const std::vector<std::string>& args, CommandIO& io);
int run_methods(const std::vector<std::string>& args, CommandIO& io);
int run_policies(const std::vector<std::string>& args, CommandIO& io);
int run_simulate(const std::vector<std::string>& args, CommandIO& io);
int run_validate(const std::vector<std::string>& args, CommandIO& io);
int run_bench(const std::vector<std::string>& args, CommandIO& io);
int run_sweep(const std::vector<std::string>& args, CommandIO& io);
int run_trace(const std::vector<std::string>& args, CommandIO& io);
int run_batch(const std::vector<std::string>& args, CommandIO& io);

}  // namespace specdec::cli
