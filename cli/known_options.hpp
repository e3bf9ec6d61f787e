#pragma once
// Command-line parsing that names an unknown option with the closest known one.
#include <boost/program_options.hpp>

namespace specdec::cli {

// Runs `parser` over `desc`'s options; an unknown option becomes a specdec::Error naming the
// closest one ("--temprature": did you mean --temperature?; Hugging Face's "--max_new_tokens":
// --max-new-tokens).
boost::program_options::parsed_options parse_known_options(boost::program_options::command_line_parser& parser,
                                                           const boost::program_options::options_description& desc);

}  // namespace specdec::cli
