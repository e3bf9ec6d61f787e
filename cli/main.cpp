// specdec: the command line. All logic lives in experiments/cli so that it can be tested.
#include "cli/cli.hpp"

int main(int argc, char** argv) { return specdec::cli::run_cli(argc, argv); }
