// Prompt lookup (draft-free): drafts copied from where the sequence's last tokens occurred
// before, by each engine's rule — vLLM's `ngram`, Hugging Face's prompt lookup, and a tree of
// several occurrences in the manner of SGLang's n-gram trie. No drafter forwards.
#include "reference/drafting/ngram_proposer.hpp"
#include "reference/methods/entries.hpp"

namespace specdec::methods {

namespace {

int param(const MethodSpec& s, const char* name) { return s.params.at(name).get<int>(); }

NgramOptions options(const MethodSpec& s, const ProposerInputs& in, NgramOptions::Rule rule) {
  NgramOptions o;
  o.name = s.name;
  o.rule = rule;
  o.k = s.k;
  o.max_model_len = in.target->max_position_embeddings;
  o.eos.assign(in.target->eos_token_ids.begin(), in.target->eos_token_ids.end());
  if (s.params.contains("n_min")) o.n_min = param(s, "n_min");
  if (s.params.contains("n_max")) o.n_max = param(s, "n_max");
  if (s.params.contains("breadth")) o.breadth = param(s, "breadth");
  if (s.params.contains("nodes")) o.max_nodes = param(s, "nodes");
  return o;
}

template <NgramOptions::Rule rule>
std::unique_ptr<Proposer> make(const MethodSpec& s, const ProposerInputs& in) {
  return std::make_unique<NgramProposer>(options(s, in, rule));
}

MethodEntry lookup_family() {
  MethodEntry e;
  e.drafter = {DrafterNeed::Kind::context, EagleKind::eagle1, "the sequence's own tokens (no model)", ""};
  e.shapes.chain = true;
  e.schedule = &no_drafter_forwards;  // the drafts are looked up in the token history
  return e;
}

MethodParam n_param(const char* name, double value, const char* doc) { return {name, true, value, 1, 128, doc}; }

}  // namespace

MethodEntry ngram() {
  MethodEntry e = lookup_family();
  e.name = "ngram";
  e.aliases = {"n-gram", "vllm-ngram"};
  e.title = "n-gram (vLLM)";
  e.summary = "copies what followed the earliest occurrence of the longest matching n-gram (vLLM's rule); no drafter";
  e.params = {n_param("n_min", 5, "vLLM prompt_lookup_min: the shortest n-gram matched"),
              n_param("n_max", 5, "vLLM prompt_lookup_max: the longest n-gram matched")};
  e.make_proposer = &make<NgramOptions::Rule::vllm>;
  e.cost_siblings = {"prompt-lookup", "ngram-tree"};
  return e;
}

MethodEntry prompt_lookup() {
  MethodEntry e = lookup_family();
  e.name = "prompt-lookup";
  e.aliases = {"prompt_lookup", "pld", "hf-ngram"};
  e.title = "prompt lookup (Hugging Face)";
  e.summary = "copies what followed the first occurrence of the last n tokens, n from n_max down to 1 (transformers' rule)";
  e.params = {n_param("n_max", 2, "transformers max_matching_ngram_size: the longest n-gram matched")};
  e.make_proposer = &make<NgramOptions::Rule::hf>;
  e.cost_siblings = {"ngram", "ngram-tree"};
  return e;
}

MethodEntry ngram_tree() {
  MethodEntry e = lookup_family();
  e.name = "ngram-tree";
  e.aliases = {"ngram_tree", "lookahead"};
  e.title = "n-gram tree";
  e.summary = "every occurrence of the longest matching n-gram as a branch of a trie of depth K (SGLang-style)";
  e.params = {n_param("n_min", 1, "shortest n-gram matched (SGLang speculative_ngram_min_match_window_size)"),
              n_param("n_max", 12, "longest n-gram matched (SGLang speculative_ngram_max_match_window_size)"),
              {"breadth", true, 10, 1, 64, "children kept per node (SGLang speculative_ngram_max_bfs_breadth)"},
              {"nodes", true, 8, 1, 1024, "draft nodes per step (SGLang speculative_num_draft_tokens − 1)"}};
  e.make_proposer = &make<NgramOptions::Rule::tree>;
  e.cost_siblings = {"ngram", "prompt-lookup"};
  return e;
}

}  // namespace specdec::methods
