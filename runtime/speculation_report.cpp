#include "runtime/speculation_report.hpp"

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace specdec {

nlohmann::json to_json(const DrafterFallback& f) {
  return {{"step", f.step}, {"drafter", f.drafter}, {"reason", f.reason}, {"next", f.next}};
}

nlohmann::json fallbacks_json(const std::vector<DrafterFallback>& fallbacks) {
  nlohmann::json out = nlohmann::json::array();
  for (const DrafterFallback& f : fallbacks) out.push_back(to_json(f));
  return out;
}

std::string fallback_text(const DrafterFallback& f) {
  return "drafter " + f.drafter + " switched off at step " + std::to_string(f.step) + " (" + f.reason + "); then " + f.next;
}

void add_speculation_json(nlohmann::json& j, const PolicySpec& policy, const GenerationResult& r) {
  j["policy"] = policy.to_json();
  j["mean_draft_depth"] = r.stats.mean_draft_depth();
  j["draft_depth_per_step"] = r.stats.draft_depth_per_step;
  j["fallbacks"] = fallbacks_json(r.fallbacks);
}

void print_speculation(std::ostream& out, const PolicySpec& policy, const GenerationResult& r, bool speculative,
                       int label_width) {
  const auto label = [&](std::string s) {
    s.resize(static_cast<std::size_t>(std::max<int>(label_width, static_cast<int>(s.size()) + 1)), ' ');
    return s;
  };
  if (policy.name != "fixed") out << label("policy") << policy.label() << "\n";
  if (speculative && !r.stats.draft_depth_per_step.empty()) {
    char mean[32];
    std::snprintf(mean, sizeof mean, "%.2f", r.stats.mean_draft_depth());
    out << label("depth") << "mean draft depth " << mean << "; steps by depth:";
    const std::vector<int>& h = r.stats.draft_depth_per_step;
    for (std::size_t d = 0; d < h.size(); ++d)
      if (h[d]) out << "  " << d << ": " << h[d];
    out << "\n";
  }
  for (const DrafterFallback& f : r.fallbacks) out << label("fallback") << fallback_text(f) << "\n";
}

}  // namespace specdec
