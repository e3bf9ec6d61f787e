#include "cli/compare_html.hpp"

namespace specdec::cli {

std::string compare_page(const std::vector<ComparedRun>& runs, const nlohmann::json& facts, bool exact_mode, const TokenText& text) {
  nlohmann::json list = nlohmann::json::array();
  bool all_agree = true;
  std::string names;
  for (const ComparedRun& r : runs) {
    nlohmann::json j = run_json(r.run, text);
    const bool same = r.run.output == runs.front().run.output;
    all_agree = all_agree && same;
    j["label"] = r.label;
    j["name"] = r.run.method;
    j["facts"] = r.facts;
    j["acceptance_length"] = r.acceptance_length;
    j["target_forwards"] = r.target_forwards;
    j["drafter_forwards"] = r.drafter_forwards;
    j["same_as_first"] = same;
    list.push_back(std::move(j));
    names += (names.empty() ? "" : ", ") + r.run.method;
  }
  const nlohmann::json data = {{"facts", facts}, {"all_agree", all_agree}, {"exact_mode", exact_mode}, {"runs", list}};
  return html_page(PageKind::compare, "specdec compare: " + names, data);
}

}  // namespace specdec::cli
