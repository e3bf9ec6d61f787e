#include "simulator/sweep_options.hpp"

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"
#include "reference/decoding/generation.hpp"
#include "reference/drafting/draft_limits.hpp"
#include "simulator/model_shape.hpp"

namespace specdec::sim {

namespace {

template <class T>
const std::vector<T>& nonempty(const std::vector<T>& v, const std::string& option_spelled) {
  if (v.empty()) throw Error(option_spelled + ": no values given");
  return v;
}

std::vector<int> bounded(const std::vector<int>& v, const std::string& option_spelled, const std::string& what, long long limit) {
  for (const int x : nonempty(v, option_spelled)) check_input_limit(option_spelled, what, x, (unsigned long long)limit);
  return v;
}

}  // namespace

SweepSpec sweep_spec_from_options(const SweepOptions& o, const OptionSpelling& sp) {
  if (o.models.empty() || o.hardware.empty())
    throw Error(sp("sweep") + " needs " + sp("model") + " and " + sp("hardware") + " (each a list)");
  const ScenarioOptions& s = o.scenario;
  if (s.alpha) throw Error("in " + sp("sweep") + " mode give acceptance rates as " + sp("alphas") + " (a list)");
  for (const auto& [option, given] : {std::pair{"al", s.al.has_value()}, std::pair{"best-k", s.best_k.has_value()},
                                      std::pair{"best-tree", s.best_tree.has_value()}, std::pair{"tree", s.tree.has_value()},
                                      std::pair{"dynamic-tree", s.dynamic_tree.has_value()}})
    if (given)
      throw Error(sp(option) + " is not available in " + sp("sweep") + " mode (it sweeps chains over " + sp("k") + ")");
  SweepSpec spec;
  spec.models = o.models;
  spec.hardware = o.hardware;
  spec.drafters = nonempty(o.drafters, sp("drafter"));
  spec.ks = nonempty(o.ks, sp("k"));
  for (const int k : spec.ks) check_draft_limit(sp("k"), "K", k, kMaxDraftDepth);
  spec.batches = bounded(o.batches, sp("batch"), "the batch size", kMaxSimulatedBatch);
  spec.tps = bounded(o.tps, sp("tp"), "the tensor-parallel degree", kMaxTensorParallel);
  spec.dp_attentions = bounded(o.dp_attentions, sp("dp-attention"), "the attention data-parallel degree", kMaxTensorParallel);
  spec.eps = bounded(o.eps, sp("ep"), "the expert-parallel degree", kMaxTensorParallel);
  spec.prompt_lens = bounded(o.prompt_lens, sp("prompt-len"), "the prompt length", kMaxPositions);
  spec.output_lens = bounded(o.output_lens, sp("output-len"), "the output length", kMaxPositions);
  spec.alphas = nonempty(o.alphas, sp("alphas"));
  spec.acceptance = acceptance_from_options(s, sp);
  if (o.dtype) spec.dtype = normalize_dtype(*o.dtype, sp("dtype"));
  if (o.engine) spec.engine = *o.engine;
  if (o.engine_version) {
    parse_engine_version(*o.engine_version, sp("engine-version"));
    spec.engine_version = *o.engine_version;
  }
  spec.any_target = o.any_target;
  return spec;
}

}  // namespace specdec::sim
