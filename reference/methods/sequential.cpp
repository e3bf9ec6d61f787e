// Sequential decoding: one target forward per token, no drafter (the baseline every method must
// reproduce exactly under greedy and coupled sampling).
#include "reference/methods/entries.hpp"

namespace specdec::methods {

MethodEntry sequential() {
  MethodEntry e;
  e.name = "sequential";
  e.aliases = {"seq", "plain"};
  e.title = "sequential";
  e.summary = "one target forward per token (the baseline)";
  return e;  // no drafter, no proposer, no drafter forwards
}

}  // namespace specdec::methods
