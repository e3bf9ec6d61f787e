#include "runtime/batched_run.hpp"

#include "reference/core/error.hpp"
#include "reference/methods/registry.hpp"

namespace specdec {

std::size_t BatchedMethods::add(const DecodeArgs& a, const LoadedDrafter* drafter) {
  check_method_args(a);
  const std::string key = method_json(a).dump();
  for (std::size_t i = 0; i < lanes_.size(); ++i)
    if (method_json(lanes_[i].args).dump() == key) return i;
  Lane lane;
  lane.args = a;
  lane.args.backend = target_.backend;
  const DrafterNeed& need = method_entry(a.method.name).drafter;
  if (need.kind != DrafterNeed::Kind::none && drafter) {
    lane.drafter = drafter;
  } else if (need.kind == DrafterNeed::Kind::context) {
    // The lane's own: its sequences share the method's run state (suffix decoding's responses).
    lane.own_drafter = std::make_shared<LoadedDrafter>(std::move(*load_drafter(lane.args, target_)));
    lane.drafter = lane.own_drafter.get();
  } else if (need.kind != DrafterNeed::Kind::none) {
    const std::string dkey = std::to_string(static_cast<int>(need.kind)) + ":" + std::to_string(static_cast<int>(need.head)) + ":" + a.drafter;
    auto& slot = drafters_[dkey];
    if (!slot) slot = std::make_unique<LoadedDrafter>(std::move(*load_drafter(lane.args, target_)));
    lane.drafter = slot.get();
  }
  lanes_.push_back(std::move(lane));
  return lanes_.size() - 1;
}

ProposerFactory BatchedMethods::factory(const std::vector<std::size_t>& lane_of_request,
                                        const std::vector<BatchRequest>& requests) const {
  if (lane_of_request.size() != requests.size()) {
    throw Error("batched run: " + std::to_string(lane_of_request.size()) + " method lanes given for " +
                std::to_string(requests.size()) + " requests");
  }
  return [this, &lane_of_request, &requests](std::size_t index, ForwardGather& gather) -> std::unique_ptr<Proposer> {
    const Lane& lane = lanes_.at(lane_of_request.at(index));
    if (!lane.drafter) return nullptr;
    const BatchRequest& r = requests[index];
    const int capacity = checked_capacity(r.prompt.size(), r.max_new_tokens, 1,
                                          target_.config.max_position_embeddings);
    const LanguageModel* draft_lm = lane.drafter->draft_lm() ? &gather.wrap(*lane.drafter->draft_lm()) : nullptr;
    const EagleHead* head = lane.drafter->head ? &gather.wrap(*lane.drafter->head) : nullptr;
    return make_proposer(lane.args, target_, lane.drafter, capacity, draft_lm, head);
  };
}

}  // namespace specdec
