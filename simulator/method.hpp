#pragma once
// The decoding methods the simulator prices: the method registry's (reference/methods), by name. A
// registry method the simulator does not price yet is refused by parse_method by name.
#include <string>
#include <vector>

#include "reference/methods/draft_schedule.hpp"

namespace specdec {
struct MethodEntry;
struct ShapeSupport;
}  // namespace specdec

namespace specdec::sim {

// One value per priced method. The names are the registry's (a test keeps every registry entry
// priced and these names equal to the entries'); the order is the simulator's own, so registry
// entries are looked up by name, never by position.
enum class Method {
  sequential, draft_model, eagle1, eagle3, peagle, ngram, prompt_lookup, ngram_tree, suffix, suffix_tree, mtp, medusa
};
inline constexpr int kPricedMethods = 12;

// The method's registry name ("draft", "eagle", "mtp", ...).
std::string method_name(Method m);
// A registry name or alias (method_entry's spellings); `source` names the input in errors.
Method parse_method(const std::string& name, const std::string& source);
// The registry entry of `m`, or null when this build's registry has none of that name;
// priced_entry throws instead.
const MethodEntry* registry_entry(Method m);
const MethodEntry& priced_entry(Method m);
// The methods whose measured engine overheads stand in for this one's (MethodEntry::cost_siblings;
// empty for a name the registry does not know).
std::vector<std::string> cost_siblings(const std::string& method);
// The draft shapes the method takes (the registry entry's).
ShapeSupport method_shapes(Method m);
// "EAGLE-3", "MTP": the entry's title, else its name.
std::string method_title(Method m);
// The drafter forwards of one step of `shape` (the registry entry's schedule: the forwards its
// proposer runs, which the method tests count).
DraftSchedule method_schedule(Method m, const StepShape& shape, const CatchUp& catch_up);

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
