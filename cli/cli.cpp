#include "cli/cli.hpp"

#include <unistd.h>

#include <iostream>

#include "reference/core/error.hpp"
#include "reference/core/suggest.hpp"
#include "specdec/version.hpp"

namespace specdec::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> list = {
      {"generate", "decode a prompt with a model and print the output and statistics", run_generate},
      {"compare", "run one prompt through several methods side by side and check that the outputs agree", run_compare},
      {"explain", "decode a prompt step by step, showing drafts, acceptance decisions and why", run_explain},
      {"record", "decode a prompt and write every step to an HDF5 trace", run_record},
      {"tokenize", "encode text with a checkpoint's tokenizer (ids and each token's text), or decode ids", run_tokenize},
      {"forward", "one forward pass over token ids (and a drafter head's first step): logits and hidden states to HDF5", run_forward},
      {"inspect", "summarise a checkpoint directory, a .safetensors or GGUF file, or a trace", run_inspect},
      {"init-model", "write a deterministic random-weight Llama checkpoint of a named shape", run_init_model},
      {"convert", "write a model (a GGUF file, a checkpoint) as a Hugging Face checkpoint: weights, config, tokenizer", run_convert},
      {"methods", "list the decoding methods: names, aliases, the drafter each needs, the shapes each takes", run_methods},
      {"policies", "list the speculation policies (--policy): each rule, its source and its parameters", run_policies},
      {"simulate", "predict latency, throughput and speedup of decoding methods on hardware", run_simulate},
      {"validate", "compare a backend step by step with the reference or a recorded trace (exit 0 pass, 1 fail)", run_validate},
      {"bench", "measure bandwidth, decode speed, verify cost and every method's speedup on this machine", run_bench},
      {"batch", "decode many prompts with continuous batching at a concurrency: throughput, TTFT, TPOT, acceptance", run_batch},
      {"sweep", "run a grid of decoding configurations over prompt sets, resumable and shardable (sweep merge joins shards)", run_sweep},
      {"trace", "check a trace file against the schema (trace check) or compare two traces step by step (trace diff)", run_trace},
  };
  return list;
}

namespace {

void print_usage(std::ostream& os) {
  os << "specdec " << kVersion << " — speculative decoding reference and simulator\n\n"
     << "usage: specdec <command> [options]   (specdec <command> --help for a command's options)\n\ncommands:\n";
  for (const Command& c : commands()) {
    std::string name = c.name;
    name.resize(12, ' ');
    os << "  " << name << c.summary << "\n";
  }
}

}  // namespace

int run_cli(const std::vector<std::string>& args, CommandIO& io) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_usage(io.out);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    io.out << "specdec " << kVersion << "\n";
    return 0;
  }
  for (const Command& c : commands()) {
    if (args[0] != c.name) continue;
    try {
      return c.run(std::vector<std::string>(args.begin() + 1, args.end()), io);
    } catch (const Error& e) {
      io.err << "specdec " << c.name << ": error: " << e.what() << "\n";
      return 1;
    } catch (const std::exception& e) {  // option parsing and library errors
      io.err << "specdec " << c.name << ": error: " << e.what() << "\n";
      return 1;
    }
  }
  std::vector<std::string> names;
  for (const Command& c : commands()) names.push_back(c.name);
  io.err << "specdec: unknown command '" << args[0] << "'" << did_you_mean(args[0], names) << "\n";
  print_usage(io.err);
  return 2;
}

int run_cli(int argc, char** argv) {
  CommandIO io{std::cout, std::cerr, isatty(STDOUT_FILENO) != 0, isatty(STDERR_FILENO) != 0};
  return run_cli(std::vector<std::string>(argv + 1, argv + argc), io);
}

}  // namespace specdec::cli
