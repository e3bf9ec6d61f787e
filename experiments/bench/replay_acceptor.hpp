#pragma once
// A TokenAcceptor for benchmarks on random-weight models, whose drafts a real rule would almost
// never accept: it accepts as many drafts per step as a recorded trace did (cycling through the
// trace's per-step accepted lengths), along the first-child path of the proposal, and then emits
// the target's greedy token. The drafter and target forwards are the real ones with the real
// shapes; only how many tokens are accepted is replayed, so wall-clock speedups reflect recorded
// acceptance behaviour.
#include <vector>

#include "reference/acceptance/acceptor.hpp"

namespace specdec {

class ReplayAcceptor final : public TokenAcceptor {
 public:
  // `accepted`: drafts accepted per verification step (trace_acceptance(trace).accepted), at
  // least one entry, none negative. Throws specdec::Error otherwise.
  explicit ReplayAcceptor(std::vector<int> accepted);

  std::string name() const override { return "replay"; }
  // Step i accepts min(accepted[i mod n], depth of the first-child path) drafts. Counts steps,
  // so one acceptor serves one decoding run at a time.
  VerifyResult verify(const VerifyInput& input) const override;

 private:
  std::vector<int> accepted_;
  mutable size_t step_ = 0;
};

}  // namespace specdec
