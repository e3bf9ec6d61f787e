#include "cli/run_header.hpp"

#include <iomanip>
#include <sstream>

#include "reference/methods/registry.hpp"

namespace specdec::cli {

namespace {

using nlohmann::json;

std::string number(double x) {
  std::ostringstream o;
  o << std::setprecision(6) << x;
  return o.str();
}

std::string plural(int n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// A static tree's paths count its nodes: "[[0],[1],[0,0]]" has 3.
int static_tree_nodes(const std::string& paths) {
  try {
    const json j = json::parse(paths);
    if (j.is_array()) return static_cast<int>(j.size());
  } catch (const json::exception&) {
  }
  return -1;  // a named tree or a file: its size is shown per step
}

std::string drafting_words(const MethodSpec& m) {
  if (m.tree == "chain") return "a chain of K = " + std::to_string(m.k) + " drafts per step";
  if (m.tree == "dynamic") {
    return "a dynamic tree (EAGLE-2): expand the top " + std::to_string(m.tree_top_k) + " by cumulative log-probability for " +
           plural(m.depth, "level") + ", keep the best " + std::to_string(m.total_tokens - 1) + " drafts (" +
           std::to_string(m.total_tokens) + " rows verified)";
  }
  const int n = static_tree_nodes(m.tree);
  return n > 0 ? "a static tree of " + plural(n, "draft") + ": " + m.tree : "the static tree " + m.tree;
}

}  // namespace

std::string sampling_words(const SamplingParams& s) {
  if (s.mode == SamplingParams::Mode::greedy) return "greedy (the target's top choice at every position)";
  std::string out = (s.mode == SamplingParams::Mode::sample ? "sampling" : "coupled sampling (Gumbel noise keyed by position)") +
                    std::string(" at temperature ") + number(s.temperature) + ", seed " + std::to_string(s.seed);
  if (s.top_k > 0) out += ", top-k " + std::to_string(s.top_k);
  if (s.top_p < 1.0) out += ", top-p " + number(s.top_p);
  return out;
}

json method_facts(const DecodeArgs& a) {
  const MethodSpec m = a.method.normalized();
  const MethodEntry& e = method_entry(m.name);
  json facts = json::array();
  std::string method = e.title.empty() ? m.name : e.title + " (" + m.name + ")";
  if (!e.summary.empty()) method += ": " + e.summary;
  facts.push_back({"method", method});
  if (!method_drafts(e)) {
    facts.push_back({"drafting", "none: one target forward per token"});
    return facts;
  }
  if (e.drafter.loads_checkpoint() && !a.drafter.empty()) facts.push_back({"drafter", a.drafter});
  facts.push_back({"drafting", drafting_words(m)});
  if (!m.params.empty()) {
    std::string params;
    for (const auto& [key, value] : m.params.items()) {
      params += (params.empty() ? "" : ", ") + key + " = " + (value.is_string() ? value.get<std::string>() : value.dump());
    }
    facts.push_back({"parameters", params});
  }
  if (a.policy.name != "fixed") facts.push_back({"policy", a.policy.label()});
  return facts;
}

json context_facts(const DecodeArgs& a, const std::string& model, const SamplingParams& sampling, const std::string& prompt_text,
                   int prompt_tokens) {
  json facts = json::array();
  facts.push_back({"model", model});
  if (a.backend != "reference") facts.push_back({"backend", a.backend});
  facts.push_back({"sampling", sampling_words(sampling)});
  facts.push_back({"new tokens", "at most " + std::to_string(a.max_new_tokens) + (a.ignore_eos ? " (end-of-sequence ignored)" : "")});
  facts.push_back({"prompt", prompt_text + " (" + plural(prompt_tokens, "token") + ")"});
  return facts;
}

}  // namespace specdec::cli
