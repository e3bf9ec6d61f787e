#include "experiments/runtime/method_spec.hpp"

#include <algorithm>

#include "reference/core/error.hpp"
#include "reference/drafting/draft_model_proposer.hpp"
#include "reference/drafting/eagle_proposer.hpp"
#include "reference/drafting/peagle_proposer.hpp"
#include "reference/drafting/tree_choices.hpp"

namespace specdec {

const std::vector<std::string>& method_names() {
  static const std::vector<std::string> names = {"sequential", "draft", "eagle", "eagle3", "peagle"};
  return names;
}

std::string canonical_method_name(const std::string& name) {
  if (name == "draft_model" || name == "draft-model") return "draft";
  if (name == "eagle1" || name == "eagle-1") return "eagle";
  return name;
}

EagleKind head_kind_for(const std::string& method) {
  return method == "eagle" ? EagleKind::eagle1 : method == "eagle3" ? EagleKind::eagle3 : EagleKind::peagle;
}

void check_method_spec(const MethodSpec& s) {
  const auto& names = method_names();
  if (std::find(names.begin(), names.end(), s.method) == names.end()) {
    if (canonical_method_name(s.method) != s.method) {
      throw Error("--method '" + s.method + "' is called '" + canonical_method_name(s.method) +
                  "' in specdec's decoding commands (one name per method in every command, file and column)");
    }
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw Error("--method '" + s.method + "' is not available; known methods: " + known);
  }
  if (s.method == "sequential") return;
  if (s.k < 1) throw Error("--k must be >= 1 (got " + std::to_string(s.k) + ")");
  if (s.method == "draft" && s.tree != "chain") throw Error("--method draft drafts a chain; --tree applies to eagle, eagle3 and peagle");
  if (s.method == "peagle" && s.tree == "dynamic") throw Error("--tree dynamic is EAGLE-2's; P-EAGLE takes chain or a static tree");
  if (s.tree == "dynamic" && (s.depth < 1 || s.tree_top_k < 1 || s.total_tokens < 2)) {
    throw Error("dynamic tree: --depth and --tree-top-k must be >= 1 and --total-tokens >= 2");
  }
}

std::unique_ptr<Proposer> make_method_proposer(const MethodSpec& s, const ModelConfig& target, const LanguageModel* draft_lm,
                                               const EagleHead* head, int capacity) {
  check_method_spec(s);
  if (s.method == "sequential") return nullptr;
  if (s.method == "draft") {
    if (!draft_lm) throw Error("--method draft needs a draft language model");
    return std::make_unique<DraftModelProposer>(*draft_lm, target, s.k, capacity);
  }
  if (!head) throw Error("--method " + s.method + " needs an " + eagle_kind_name(head_kind_for(s.method)) + " head");
  if (head->config().kind != head_kind_for(s.method)) {
    throw Error("--method " + s.method + " needs an " + eagle_kind_name(head_kind_for(s.method)) + " head, not an " +
                eagle_kind_name(head->config().kind) + " head");
  }
  if (s.method == "peagle") {
    PEagleOptions o;
    o.k = s.k;
    o.force = s.force_depth;
    if (s.tree != "chain") {
      o.shape = PEagleShape::tree;
      o.choices = tree_choices_from_spec(s.tree);
    }
    return std::make_unique<PEagleProposer>(*head, o, capacity);
  }
  EagleOptions o;
  o.k = s.k;
  if (s.tree == "dynamic") {
    o.shape = EagleShape::dynamic_tree;
    o.depth = s.depth;
    o.top_k = s.tree_top_k;
    o.total_tokens = s.total_tokens;
  } else if (s.tree != "chain") {
    o.shape = EagleShape::static_tree;
    o.choices = tree_choices_from_spec(s.tree);
  }
  return std::make_unique<EagleProposer>(*head, o, capacity);
}

std::string method_shape(const MethodSpec& s) {
  if (s.method == "sequential") return "";
  if (s.tree == "chain") return "k=" + std::to_string(s.k);
  if (s.tree == "dynamic") {
    return "tree=dynamic depth=" + std::to_string(s.depth) + " top_k=" + std::to_string(s.tree_top_k) +
           " total_tokens=" + std::to_string(s.total_tokens);
  }
  return "tree=" + s.tree;  // a static tree's depth is its own (P-EAGLE's K included)
}

}  // namespace specdec
