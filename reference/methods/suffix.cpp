// Suffix decoding (Oliaro et al. 2024; Arctic Inference, vLLM's `suffix` method), draft-free:
// suffix trees over the request's prompt and output and over the run's earlier responses; the
// drafts follow the most frequent continuation of the longest-scoring match, as a path (`suffix`)
// or a best-first tree (`suffix-tree`). No drafter forwards.
#include "reference/drafting/suffix_proposer.hpp"
#include "reference/methods/entries.hpp"

namespace specdec::methods {

namespace {

SuffixOptions options(const MethodSpec& s, const ProposerInputs& in, bool tree) {
  SuffixOptions o;
  o.k = s.k;
  o.name = s.name;
  o.tree = tree;
  o.max_model_len = in.target->max_position_embeddings;
  o.max_depth = s.params.at("tree_depth").get<int>();
  o.spec_factor = static_cast<float>(s.params.at("spec_factor").get<double>());
  o.spec_offset = static_cast<float>(s.params.at("spec_offset").get<double>());
  o.min_token_prob = static_cast<float>(s.params.at("min_prob").get<double>());
  o.max_cached = s.params.at("cached_requests").get<int>();
  return o;
}

std::shared_ptr<SuffixResponses> responses(const ProposerInputs& in) {
  return std::dynamic_pointer_cast<SuffixResponses>(in.run_state);
}

template <bool tree>
std::unique_ptr<Proposer> make(const MethodSpec& s, const ProposerInputs& in) {
  return std::make_unique<SuffixProposer>(options(s, in, tree), responses(in));
}

std::shared_ptr<MethodRunState> run_state(const MethodSpec& s) {
  return std::make_shared<SuffixResponses>(s.params.at("tree_depth").get<int>(), s.params.at("cached_requests").get<int>());
}

MethodEntry suffix_family() {
  MethodEntry e;
  e.drafter = {DrafterNeed::Kind::context, EagleKind::eagle1, "suffix trees of the prompt, the output and earlier responses (no model)", ""};
  e.shapes.chain = true;
  // Defaults: vLLM's SpeculativeConfig (suffix_decoding_*) and Arctic Inference's speculate().
  e.params = {{"tree_depth", true, 24, 1, 64, "vLLM suffix_decoding_max_tree_depth: suffixes are cut at this many tokens"},
              {"spec_factor", false, 1.0, 0, 64, "vLLM suffix_decoding_max_spec_factor: the budget is ⌊m · spec_factor + spec_offset⌋ for a match of m tokens"},
              {"spec_offset", false, 0.0, -64, 64, "Arctic Inference max_spec_offset"},
              {"min_prob", false, 0.1, 0, 1, "vLLM suffix_decoding_min_token_prob: drafting stops below this path probability"},
              {"cached_requests", true, 10000, 0, 1000000, "vLLM suffix_decoding_max_cached_requests: earlier responses kept (0: none)"}};
  e.make_run_state = &run_state;
  e.schedule = &no_drafter_forwards;
  return e;
}

}  // namespace

MethodEntry suffix() {
  MethodEntry e = suffix_family();
  e.name = "suffix";
  e.aliases = {"suffix-decoding", "suffix_decoding"};
  e.title = "suffix decoding";
  e.summary = "follows the most frequent continuation in suffix trees of the prompt, output and earlier responses; no drafter";
  e.make_proposer = &make<false>;
  e.cost_siblings = {"suffix-tree", "ngram"};
  return e;
}

MethodEntry suffix_tree() {
  MethodEntry e = suffix_family();
  e.name = "suffix-tree";
  e.aliases = {"suffix_tree"};
  e.title = "suffix decoding (tree)";
  e.summary = "suffix decoding's best-first tree: the most probable continuations, up to K nodes";
  e.make_proposer = &make<true>;
  e.cost_siblings = {"suffix", "ngram-tree"};
  return e;
}

}  // namespace specdec::methods
