#include "reference/methods/method_spec.hpp"

#include "reference/core/error.hpp"
#include "reference/io/json_int.hpp"
#include "reference/methods/registry.hpp"

namespace specdec {

namespace {

// "eagle, eagle3 and peagle": the methods whose shapes include `takes`.
std::string methods_taking(bool ShapeSupport::*takes) {
  std::vector<std::string> names;
  for (const MethodEntry& e : method_registry())
    if (e.shapes.*takes) names.push_back(e.name);
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return s;
}

}  // namespace

MethodSpec MethodSpec::normalized() const {
  const MethodSpec d;
  MethodSpec s;
  s.name = name;
  if (!method_entry(name).make_proposer) return s;  // sequential decoding has no shape
  s.tree = tree;
  if (tree == "chain") s.k = k;
  if (tree == "dynamic") s.depth = depth, s.tree_top_k = tree_top_k, s.total_tokens = total_tokens;
  if (tree == "chain" && method_entry(name).shapes.force_depth) s.force_depth = force_depth;
  return s;
}

nlohmann::json MethodSpec::to_json() const {
  const MethodSpec s = normalized();
  nlohmann::json j = {{"method", s.name}};
  if (!method_entry(s.name).make_proposer) return j;
  j["tree"] = s.tree;
  if (s.tree == "chain") j["k"] = s.k;
  if (s.tree == "dynamic") {
    j["depth"] = s.depth;
    j["tree_top_k"] = s.tree_top_k;
    j["total_tokens"] = s.total_tokens;
  }
  if (s.force_depth) j["force_depth"] = true;
  return j;
}

std::string MethodSpec::shape() const {
  if (!method_entry(name).make_proposer) return "";
  if (tree == "chain") return "k=" + std::to_string(k);
  if (tree == "dynamic") {
    return "tree=dynamic depth=" + std::to_string(depth) + " top_k=" + std::to_string(tree_top_k) +
           " total_tokens=" + std::to_string(total_tokens);
  }
  return "tree=" + tree;  // a static tree's depth is its own (P-EAGLE's K included)
}

std::string MethodSpec::label() const {
  const std::string s = shape();
  return s.empty() ? name : name + " " + s;
}

MethodSpec method_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw Error(where + ": expected a method object {\"method\": NAME, ...}, got " + j.dump());
  MethodSpec s;
  try {
    s.name = method_entry(j.at("method").get<std::string>(), where).name;
    if (j.contains("tree")) s.tree = j["tree"].get<std::string>();
    if (j.contains("k")) s.k = json_int32(j["k"], where + ".k");
    if (j.contains("depth")) s.depth = json_int32(j["depth"], where + ".depth");
    if (j.contains("tree_top_k")) s.tree_top_k = json_int32(j["tree_top_k"], where + ".tree_top_k");
    if (j.contains("total_tokens")) s.total_tokens = json_int32(j["total_tokens"], where + ".total_tokens");
    if (j.contains("force_depth")) s.force_depth = j["force_depth"].get<bool>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": " + e.what() + "; expected {\"method\": NAME, \"tree\": SHAPE, \"k\": K, ...}");
  }
  check_method_spec(s);
  return s.normalized();
}

void check_method_spec(const MethodSpec& s) {
  const MethodEntry& e = method_entry(s.name);
  if (e.name != s.name) {
    throw Error("--method '" + s.name + "' is spelled '" + e.name + "' inside specdec (parse it with canonical_method_name)");
  }
  if (!e.make_proposer) return;
  if (s.tree == "chain" && !e.shapes.chain) throw Error("--method " + e.name + " drafts a tree; give --tree");
  if (s.tree == "dynamic" && !e.shapes.dynamic_tree) {
    throw Error(e.shapes.static_tree ? "--tree dynamic is EAGLE-2's; " + e.title + " takes chain or a static tree"
                                     : "--tree dynamic applies to " + methods_taking(&ShapeSupport::dynamic_tree));
  }
  if (s.tree != "chain" && s.tree != "dynamic" && !e.shapes.static_tree) {
    throw Error("--method " + e.name + " drafts a chain; --tree applies to " + methods_taking(&ShapeSupport::static_tree));
  }
  if (s.k < 1) throw Error("--k must be >= 1 (got " + std::to_string(s.k) + ")");
  if (s.tree == "dynamic" && (s.depth < 1 || s.tree_top_k < 1 || s.total_tokens < 2)) {
    throw Error("dynamic tree: --depth and --tree-top-k must be >= 1 and --total-tokens >= 2");
  }
}

}  // namespace specdec
