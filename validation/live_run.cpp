// One observed live run of the method on a backend (validation/live_run.hpp).
#include "validation/live_run.hpp"

#include <optional>

#include "validation/forced_proposer.hpp"
#include "reference/acceptance/acceptor.hpp"
#include "reference/core/error.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/decoding/speculative.hpp"

namespace specdec::validation {

LiveRun run_live(const ValidationSetup& setup, const Backend& b, const Forcing& forcing, bool layer_states, bool drafter_rows) {
  if (!b.target) throw Error("validation: backend '" + b.name + "' has no target model");
  int draft_step = 0;
  ObservedModel target(*b.target, false, nullptr, layer_states);
  for (const auto& [s, m] : forcing.logits) target.replace_logits(s, m);
  std::optional<ObservedModel> draft;
  if (b.draft_lm) draft.emplace(*b.draft_lm, true, &draft_step);
  TraceMeta meta;
  meta.method = setup.method;
  meta.seed = setup.sampling.seed;
  RunRecorder recorder(meta, setup.sampling, setup.options.sequence);
  std::shared_ptr<const ObservedHeadEngine> head_observer;
  std::optional<EagleHead> observed_head;
  if (b.head && drafter_rows) observed_head.emplace(observe_head(*b.head, &draft_step, head_observer));
  const EagleHead* head = observed_head ? &*observed_head : b.head;
  std::unique_ptr<Proposer> inner = setup.make_proposer ? setup.make_proposer(draft ? &*draft : nullptr, head) : nullptr;
  if (!inner) {
    decode_sequential(target, setup.prompt, setup.sampling, setup.options, &recorder);
  } else {
    // Steps are numbered as the decoder numbers them, so that plain steps (no proposal) keep
    // the forced drafts and the drafter forwards on their steps.
    ForcedProposer proposer(*inner, &draft_step, [&recorder] { return recorder.next_step(); });
    for (const auto& [s, p] : forcing.drafts) proposer.force(s, p);
    const auto acceptor = default_acceptor(setup.sampling);
    const std::unique_ptr<SpeculationPolicy> policy = setup.make_policy ? setup.make_policy() : nullptr;
    SpeculationControl control;
    control.policy = policy.get();
    decode_speculative(target, proposer, *acceptor, setup.prompt, setup.sampling, setup.options, control, &recorder);
  }
  LiveRun live;
  live.run = recorder.take();
  live.target_forwards = target.records();
  if (draft) live.draft_forwards = draft->records();
  if (head_observer) live.head_forwards = head_observer->records();
  if (head_observer) live.head = b.head;
  return live;
}

}  // namespace specdec::validation
