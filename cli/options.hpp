#pragma once
// The decoding subcommands' shared options (bound to a DecodeArgs, runtime/decode_request.hpp),
// option parsing with --help, and how text is shown on a terminal.
#include <boost/program_options.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "reference/acceptance/forced_acceptor.hpp"
#include "reference/acceptance/typical_acceptor.hpp"
#include "runtime/decode_request.hpp"

namespace specdec::cli {

namespace po = boost::program_options;

// --model, --prompt/--prompt-ids, --method, sampling, --max-new-tokens, --ignore-eos, --threads,
// --backend, --json.
void add_decode_options(po::options_description& desc, DecodeArgs& a);

// --forced-acceptance SPEC (bench, generate): parsed into `forced` when given; a bad SPEC throws
// specdec::Error naming the option.
void add_forced_acceptance_option(po::options_description& desc, std::optional<ForcedAcceptance>& forced);

// --typical-acceptance [epsilon=E,delta=D] (generate): Medusa's lossy typical acceptance, parsed
// into `typical` when given; the option alone (or with an empty value) gives the defaults. A bad
// value throws specdec::Error naming the option.
void add_typical_acceptance_option(po::options_description& desc, std::optional<TypicalAcceptance>& typical);

// Parses `args` against `desc`; returns false (after printing usage) when --help was given.
// Unknown options and bad values throw with a message naming the option.
bool parse_options(const std::vector<std::string>& args, po::options_description& desc, CommandIO& io,
                   const std::string& usage_line, po::positional_options_description* positional = nullptr);

// Text for a terminal: printable ASCII and valid UTF-8 kept, everything else as \xNN escapes.
std::string printable(const std::string& text);
// Text on one line, for showing tokens and text the same way everywhere (specdec explain's text
// and page): as printable(), with backslash, newline, tab and carriage return written as \\, \n,
// \t and \r.
std::string escaped(const std::string& text);

}  // namespace specdec::cli
