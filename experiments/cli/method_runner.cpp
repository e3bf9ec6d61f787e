#include "experiments/cli/method_runner.hpp"

#include <algorithm>

#include "reference/acceptance/acceptor.hpp"
#include "reference/core/error.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/decoding/speculative.hpp"
#include "reference/drafters/eagle_checkpoint.hpp"
#include "reference/drafting/draft_model_proposer.hpp"
#include "reference/drafting/eagle_proposer.hpp"
#include "reference/drafting/peagle_proposer.hpp"

namespace specdec::cli {

namespace {

EagleKind head_kind_for(const std::string& method) {
  return method == "eagle" ? EagleKind::eagle1 : method == "eagle3" ? EagleKind::eagle3 : EagleKind::peagle;
}

TreeChoices tree_choices(const DecodeArgs& a) { return tree_choices_from_spec(a.tree); }

}  // namespace

const std::vector<std::string>& method_names() {
  static const std::vector<std::string> names = {"sequential", "draft", "eagle", "eagle3", "peagle"};
  return names;
}

void check_method_args(const DecodeArgs& a) {
  const auto& names = method_names();
  if (std::find(names.begin(), names.end(), a.method) == names.end()) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw Error("--method '" + a.method + "' is not available; known methods: " + known);
  }
  if (a.method == "sequential") return;
  if (a.k < 1) throw Error("--k must be >= 1 (got " + std::to_string(a.k) + ")");
  if (a.drafter.empty()) {
    throw Error("--method " + a.method + " needs --drafter DIR (" +
                (a.method == "draft" ? std::string("a small model sharing the target's vocabulary")
                                     : std::string("an ") + eagle_kind_name(head_kind_for(a.method)) + " head") + ")");
  }
  if (a.method == "draft" && a.tree != "chain") throw Error("--method draft drafts a chain; --tree applies to eagle, eagle3 and peagle");
  if (a.method == "peagle" && a.tree == "dynamic") throw Error("--tree dynamic is EAGLE-2's; P-EAGLE takes chain or a static tree");
  if (a.tree == "dynamic" && (a.depth < 1 || a.tree_top_k < 1 || a.total_tokens < 2)) {
    throw Error("dynamic tree: --depth and --tree-top-k must be >= 1 and --total-tokens >= 2");
  }
}

DecodeJob prepare_decode(const DecodeArgs& a) {
  apply_threads(a.threads);
  check_method_args(a);
  DecodeJob job;
  job.options = generation_options(a);
  job.sampling = sampling_params(a);
  job.target = load_model(a.model);
  job.prompt = prompt_tokens(a, job.target);
  return job;
}

std::optional<LoadedDrafter> load_drafter(const DecodeArgs& a, const LoadedModel& target) {
  check_method_args(a);
  if (a.method == "sequential") return std::nullopt;
  LoadedDrafter d;
  d.path = a.drafter;
  if (a.method == "draft") {
    LoadedModel m = load_model(a.drafter);
    d.fingerprint = m.fingerprint;
    d.config_json = model_config_to_json(m.model->config()).dump();
    d.model = std::move(m.model);
    return d;
  }
  d.head = std::make_unique<EagleHead>(load_eagle_head(a.drafter, *target.model));
  const EagleKind want = head_kind_for(a.method);
  if (d.head->config().kind != want) {
    throw Error(a.drafter + " holds an " + eagle_kind_name(d.head->config().kind) + " head; --method " + a.method +
                " needs an " + eagle_kind_name(want) + " head");
  }
  d.fingerprint = eagle_head_fingerprint(*d.head);
  d.config_json = eagle_config_to_json(d.head->config(), target.model->config().num_hidden_layers,
                                       target.model->config().architecture)
                      .dump();
  return d;
}

GenerationResult run_method(const DecodeArgs& a, const LoadedModel& target, const std::vector<int32_t>& prompt,
                            const SamplingParams& sampling, const GenerationOptions& options, DecodeObserver* observer,
                            const LoadedDrafter* drafter) {
  check_method_args(a);
  if (a.method == "sequential") return decode_sequential(*target.model, prompt, sampling, options, observer);
  std::optional<LoadedDrafter> loaded;
  if (!drafter) {
    loaded = load_drafter(a, target);
    drafter = &*loaded;
  }
  const auto acceptor = default_acceptor(sampling);
  const int capacity = static_cast<int>(prompt.size()) + options.max_new_tokens + 1;
  std::unique_ptr<Proposer> proposer;
  if (a.method == "draft") {
    proposer = std::make_unique<DraftModelProposer>(*drafter->model, target.model->config(), a.k, capacity);
  } else if (a.method == "peagle") {
    PEagleOptions o;
    o.k = a.k;
    o.force = a.force_depth;
    if (a.tree != "chain") {
      o.shape = PEagleShape::tree;
      o.choices = tree_choices(a);
    }
    proposer = std::make_unique<PEagleProposer>(*drafter->head, o, capacity);
  } else {
    EagleOptions o;
    o.k = a.k;
    if (a.tree == "dynamic") {
      o.shape = EagleShape::dynamic_tree;
      o.depth = a.depth;
      o.top_k = a.tree_top_k;
      o.total_tokens = a.total_tokens;
    } else if (a.tree != "chain") {
      o.shape = EagleShape::static_tree;
      o.choices = tree_choices(a);
    }
    proposer = std::make_unique<EagleProposer>(*drafter->head, o, capacity);
  }
  return decode_speculative(*target.model, *proposer, *acceptor, prompt, sampling, options, observer);
}

nlohmann::json method_json(const DecodeArgs& a) {
  nlohmann::json j = {{"method", a.method}};
  if (a.method == "sequential") return j;
  j["drafter"] = a.drafter;
  j["tree"] = a.tree;
  if (a.tree == "chain" || a.method == "peagle") j["k"] = a.k;
  if (a.tree == "dynamic") {
    j["depth"] = a.depth;
    j["tree_top_k"] = a.tree_top_k;
    j["total_tokens"] = a.total_tokens;
  }
  if (a.force_depth) j["force_depth"] = true;
  return j;
}

}  // namespace specdec::cli
