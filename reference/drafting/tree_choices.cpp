#include "reference/drafting/draft_limits.hpp"
#include "reference/drafting/tree_choices.hpp"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <map>

#include "reference/core/error.hpp"
#include "reference/core/suggest.hpp"
#include "reference/io/json_input.hpp"

namespace specdec {
namespace {

std::string path_str(const std::vector<int>& p) {
  std::string s = "[";
  for (size_t i = 0; i < p.size(); ++i) s += (i ? ", " : "") + std::to_string(p[i]);
  return s + "]";
}

const char* kExample = "a list of paths of child ranks, e.g. [[0], [1], [0, 0]]";

}  // namespace

TreeShape TreeShape::truncated(int depth) const {
  TreeShape t;
  for (int n = 0; n < size() && depths[static_cast<size_t>(n)] <= depth; ++n) {
    t.paths.push_back(paths[static_cast<size_t>(n)]);
    t.parents.push_back(parents[static_cast<size_t>(n)]);
    t.ranks.push_back(ranks[static_cast<size_t>(n)]);
    t.depths.push_back(depths[static_cast<size_t>(n)]);
  }
  return t;
}

int TreeShape::max_depth() const { return depths.empty() ? 0 : *std::max_element(depths.begin(), depths.end()); }

int TreeShape::max_rank() const { return ranks.empty() ? -1 : *std::max_element(ranks.begin(), ranks.end()); }

bool TreeShape::has_children(int node) const { return std::find(parents.begin(), parents.end(), node) != parents.end(); }

int TreeShape::nodes_at_depth(int d) const { return static_cast<int>(std::count(depths.begin(), depths.end(), d)); }

int TreeShape::num_leaves() const {
  std::vector<bool> has_child(parents.size(), false);
  for (int p : parents)
    if (p >= 0) has_child[static_cast<size_t>(p)] = true;
  return static_cast<int>(std::count(has_child.begin(), has_child.end(), false));
}

const TreeChoices& mc_sim_7b_63() {
  static const TreeChoices c = {{0},          {1},          {2},          {3},          {0, 0},          {0, 1},
                                {0, 2},       {1, 0},       {1, 1},       {2, 0},       {2, 1},          {3, 0},
                                {0, 0, 0},    {0, 0, 1},    {0, 0, 2},    {0, 1, 0},    {0, 1, 1},       {0, 2, 0},
                                {0, 2, 1},    {1, 0, 0},    {0, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 0, 2},    {0, 0, 0, 0, 0},
                                {0, 0, 0, 0, 1}};
  return c;
}

TreeShape make_tree_shape(const TreeChoices& choices, const std::string& source) {
  if (choices.empty()) throw Error(source + ": the tree choices are empty; expected " + kExample);
  check_draft_limit(source, "the number of paths (draft nodes)", static_cast<long long>(choices.size()), kMaxDraftNodes);
  for (size_t i = 0; i < choices.size(); ++i) {
    const std::vector<int>& p = choices[i];
    if (p.empty()) throw Error(source + ": path #" + std::to_string(i) + " is empty; every path names at least one rank");
    check_draft_limit(source, "the depth of path #" + std::to_string(i), static_cast<long long>(p.size()), kMaxDraftDepth);
    for (size_t d = 0; d < p.size(); ++d) {
      if (p[d] < 0) {
        throw Error(source + ": path #" + std::to_string(i) + " " + path_str(p) + " has rank " + std::to_string(p[d]) +
                    " at depth " + std::to_string(d + 1) + "; ranks are child ranks >= 0 (0 = the best candidate)");
      }
    }
  }
  TreeShape s;
  s.paths = choices;
  // EAGLE's order: by depth, then lexicographically; parents come before their children.
  std::sort(s.paths.begin(), s.paths.end(), [](const std::vector<int>& a, const std::vector<int>& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  std::map<std::vector<int>, int> index;
  for (int n = 0; n < s.size(); ++n) {
    const std::vector<int>& p = s.paths[n];
    if (!index.emplace(p, n).second) throw Error(source + ": path " + path_str(p) + " is listed twice");
    int parent = -1;
    if (p.size() > 1) {
      const std::vector<int> up(p.begin(), p.end() - 1);
      const auto it = index.find(up);
      if (it == index.end()) {
        throw Error(source + ": path " + path_str(p) + " has no parent path " + path_str(up) +
                    "; every prefix of a listed path must be listed too");
      }
      parent = it->second;
    }
    s.parents.push_back(parent);
    s.ranks.push_back(p.back());
    s.depths.push_back(static_cast<int>(p.size()));
  }
  return s;
}

TreeChoices parse_tree_choices(const nlohmann::json& j, const std::string& source) {
  if (!j.is_array()) throw Error(source + ": tree choices must be " + kExample + ", got " + j.dump());
  TreeChoices out;
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& p = j.at(i);
    if (!p.is_array()) {
      throw Error(source + ": entry #" + std::to_string(i) + " is " + p.dump() + ", not a list; tree choices must be " +
                  kExample);
    }
    std::vector<int> path;
    for (size_t d = 0; d < p.size(); ++d) {
      const nlohmann::json& r = p.at(d);
      if (!r.is_number_integer()) {
        throw Error(source + ": entry #" + std::to_string(i) + " " + p.dump() + " holds " + r.dump() +
                    " at depth " + std::to_string(d + 1) + "; ranks are integers >= 0");
      }
      const bool bad = r.is_number_unsigned() ? r.get<uint64_t>() > static_cast<uint64_t>(INT_MAX)
                                              : (r.get<int64_t>() < 0 || r.get<int64_t>() > INT_MAX);
      if (bad) {
        throw Error(source + ": entry #" + std::to_string(i) + " " + p.dump() + " has rank " + r.dump() + " at depth " +
                    std::to_string(d + 1) + "; ranks are child ranks >= 0 (0 = the best candidate)");
      }
      path.push_back(r.get<int>());
    }
    out.push_back(std::move(path));
  }
  make_tree_shape(out, source);  // the structural checks
  return out;
}

TreeChoices load_tree_choices(const std::filesystem::path& file) {
  const std::string source = file.string();
  std::string text;
  try {
    text = read_input_file(source, "tree choices file");
  } catch (const Error& e) {
    throw Error(source + ": cannot open the tree choices file (" + e.what() + ")");
  }
  check_json_depth(text, source);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(source + ": not valid JSON (" + e.what() + "); expected " + kExample);
  }
  return parse_tree_choices(j, source);
}

TreeChoices tree_choices_from_spec(const std::string& spec) {
  if (spec == "mc_sim_7b_63") return mc_sim_7b_63();
  if (!spec.empty() && spec.front() == '[') {  // inline JSON, e.g. [[0],[1],[0,0]]
    // Messages quote at most the start of a long inline spec.
    const std::string label = "tree choices '" + (spec.size() <= 80 ? spec : spec.substr(0, 80) + "...") + "'";
    check_json_depth(spec, label);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(spec);
    } catch (const nlohmann::json::exception& e) {
      throw Error(label + ": not valid JSON (" + e.what() + ")");
    }
    return parse_tree_choices(j, label);
  }
  std::error_code ec;
  if (!std::filesystem::exists(spec, ec) && spec.find('/') == std::string::npos && spec.find('.') == std::string::npos) {
    // A word, not a path: most likely a mistyped name.
    const std::vector<std::string> named = {"chain", "dynamic", "mc_sim_7b_63"};
    throw Error("tree '" + spec + "' is neither a named tree (chain, dynamic, mc_sim_7b_63" + did_you_mean(spec, named) +
                ") nor a file; expected a name, or " + kExample + ", inline or in a JSON file");
  }
  return load_tree_choices(spec);
}

nlohmann::json tree_choices_to_json(const TreeChoices& choices) {
  nlohmann::json j = nlohmann::json::array();
  for (const std::vector<int>& p : choices) j.push_back(p);
  return j;
}

}  // namespace specdec
