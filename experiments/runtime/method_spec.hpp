#pragma once
// A decoding method and its drafting shape (--method, --k, --tree, ...), and the Proposer that
// carries it out with given drafters: the one place that turns a method name into a proposer for
// generate, record, explain, validate and bench.
#include <memory>
#include <string>
#include <vector>

#include "reference/drafters/eagle_head.hpp"
#include "reference/drafting/proposer.hpp"
#include "reference/model/language_model.hpp"

namespace specdec {

struct MethodSpec {
  std::string method = "sequential";  // sequential | draft | eagle | eagle3 | peagle
  int k = 4;                          // chain length; P-EAGLE's parallel depth
  std::string tree = "chain";         // chain | dynamic | mc_sim_7b_63 | JSON paths (inline or a file)
  int depth = 7;                      // dynamic tree
  int tree_top_k = 10;                // dynamic tree
  int total_tokens = 60;              // dynamic tree
  bool force_depth = false;           // P-EAGLE beyond its trained depth
};

// Names accepted as a method: sequential, draft, eagle, eagle3, peagle.
const std::vector<std::string>& method_names();
// The one vocabulary of method names, in every command, file and column: sequential, draft,
// eagle (EAGLE-1), eagle3, peagle. Older spellings (the simulator's draft_model and eagle1,
// draft-model, eagle-1) map onto it; anything else is returned unchanged (and refused later).
std::string canonical_method_name(const std::string& name);
// The head kind an EAGLE-family method drafts with (eagle → eagle1, eagle3, peagle).
EagleKind head_kind_for(const std::string& method);

// Checks the method name and its shape options; messages name the command-line options (--k,
// --tree, ...). Throws specdec::Error.
void check_method_spec(const MethodSpec& spec);

// The proposer of a speculative method (null for sequential) for sequences of up to `capacity`
// tokens: a draft LM (`draft_lm`, sharing the target's vocabulary) for "draft", an EAGLE-family
// head (`head`, of the method's kind) otherwise. Throws specdec::Error if the drafter the method
// needs is missing or of the wrong kind.
std::unique_ptr<Proposer> make_method_proposer(const MethodSpec& spec, const ModelConfig& target, const LanguageModel* draft_lm,
                                               const EagleHead* head, int capacity);

// "k=4", "tree=dynamic depth=7 top_k=10 total_tokens=60", "tree=mc_sim_7b_63", "" (sequential).
std::string method_shape(const MethodSpec& spec);

}  // namespace specdec
