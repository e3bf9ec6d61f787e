#pragma once
// The decoding methods the simulator prices: the method registry's (reference/methods), in its
// order. A registry method the simulator does not price yet is refused by parse_method by name.
#include <string>

namespace specdec::sim {

// One value per registry entry, in registry order (a test keeps the two in step).
enum class Method { sequential, draft_model, eagle1, eagle3, peagle, ngram, prompt_lookup, ngram_tree, suffix, suffix_tree };
inline constexpr int kPricedMethods = 10;

// The method's registry name (method_registry()[m].name).
std::string method_name(Method m);
// A registry name or alias (method_entry's spellings); `source` names the input in errors.
Method parse_method(const std::string& name, const std::string& source);

// Draft-free: the registry entry drafts from the token history (DrafterNeed::Kind::context: n-gram
// lookup, suffix decoding): no drafter forward, a host lookup per step instead.
bool draft_free(Method m);
// A draft-free method that drafts a tree of its own from the history (ngram-tree: up to its
// `nodes` parameter, depth K; suffix-tree: up to K nodes) rather than a chain of K.
bool draft_free_tree(Method m);
// Nodes a draft-free step verifies besides the bonus token when it drafts: K for chains and
// suffix-tree, `nodes` for ngram-tree (0 = the registry's default for it).
int draft_free_nodes(Method m, int k, int nodes);

}  // namespace specdec::sim
