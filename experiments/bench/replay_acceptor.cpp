#include "experiments/bench/replay_acceptor.hpp"

#include "reference/core/error.hpp"
#include "reference/sampling/sampler.hpp"

namespace specdec {

ReplayAcceptor::ReplayAcceptor(std::vector<int> accepted) : accepted_(std::move(accepted)) {
  if (accepted_.empty()) throw Error("replay acceptance: no accepted lengths to replay (the trace has no speculative steps)");
  for (int a : accepted_)
    if (a < 0) throw Error("replay acceptance: accepted length " + std::to_string(a) + " is negative");
}

VerifyResult ReplayAcceptor::verify(const VerifyInput& in) const {
  if (!in.tree || !in.target_logits) throw Error("replay acceptance: draft tree and target logits are required");
  const DraftTree& tree = *in.tree;
  const int want = accepted_[step_++ % accepted_.size()];
  VerifyResult r;
  int point = -1;
  for (int d = 0; d < want; ++d) {
    const std::vector<int> children = tree.children(point);
    if (children.empty()) break;
    point = children[0];
    r.accepted_nodes.push_back(point);
    r.emitted.push_back(tree.tokens[point]);
    r.decisions.push_back(1);
    r.decision_nodes.push_back(point);
  }
  const int V = static_cast<int>(in.target_logits->cols());
  const int32_t next = argmax(in.target_logits->row(point + 1).data(), V);
  const std::vector<int> children = tree.children(point);
  if (children.empty()) {
    r.bonus_token = next;
  } else {
    r.decisions.push_back(0);
    r.decision_nodes.push_back(children[0]);
  }
  r.emitted.push_back(next);
  return r;
}

}  // namespace specdec
