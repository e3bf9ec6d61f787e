#include "cli/known_options.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "reference/core/error.hpp"
#include "reference/core/suggest.hpp"

namespace specdec::cli {

namespace po = boost::program_options;

po::parsed_options parse_known_options(po::command_line_parser& parser, const po::options_description& desc) {
  try {
    return parser.run();
  } catch (const po::unknown_option& e) {
    const std::string given = e.get_option_name().substr(0, e.get_option_name().find('='));  // "--max_new_tokens"
    const std::string bare = given.substr(std::min(given.find_first_not_of('-'), given.size()));
    std::vector<std::string> names;
    for (const auto& o : desc.options())
      if (!o->long_name().empty()) names.push_back(o->long_name());
    std::string dashed = bare;  // Hugging Face and Python spell options with underscores
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    const std::string hint = std::find(names.begin(), names.end(), dashed) != names.end() ? dashed : closest_name(bare, names);
    throw Error("unrecognised option '" + given + "'" + (hint.empty() ? "" : "; did you mean --" + hint + "?") +
                " (--help lists the options)");
  }
}

}  // namespace specdec::cli
