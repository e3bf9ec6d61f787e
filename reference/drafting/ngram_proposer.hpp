#pragma once
// Prompt lookup as a Proposer: each step drafts what followed an earlier occurrence of the
// sequence's last tokens (ngram_lookup.hpp has the rules). Drafts are deterministic (the
// acceptors treat them as one-hot draft distributions) and record where they were copied from.
#include "reference/drafting/ngram_lookup.hpp"
#include "reference/drafting/proposer.hpp"

namespace specdec {

struct NgramOptions {
  enum class Rule { vllm, hf, tree };
  std::string name = "n-gram lookup";  // the entry sets its registry name (errors, fallbacks, explain)
  Rule rule = Rule::vllm;
  int k = 4;            // drafts per step (chain); the tree's depth
  int n_min = 1;        // shortest n-gram matched (vllm, tree)
  int n_max = 4;        // longest n-gram matched
  int breadth = 1;      // tree: children kept per node
  int max_nodes = 4;    // tree: draft nodes per step
  int max_model_len = 0;  // vllm: the model's context (drafts stop there)
  std::vector<int32_t> eos;  // hf: the EOS ids drafts stop before
};

class NgramProposer final : public Proposer {
 public:
  explicit NgramProposer(NgramOptions options);

  std::string name() const override { return options_.name; }
  int max_nodes() const override { return options_.rule == NgramOptions::Rule::tree ? options_.max_nodes : options_.k; }
  int max_depth() const override { return options_.k; }
  Proposal propose(const DraftContext& context) override;

 private:
  NgramOptions options_;
};

}  // namespace specdec
