#pragma once
// generate(..., acceptance=rule): a Python callable as the TokenAcceptor of a speculative run, so
// that a new acceptance rule is prototyped on specdec's forwards and drafts. The contract (what
// the rule is given and must return) is the docstring ACCEPTANCE_RULE_DOC and docs/python.md,
// "Acceptance rules from Python".
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "reference/acceptance/acceptor.hpp"
#include "reference/sampling/counter_rng.hpp"

namespace specdec::python {

extern const char* const ACCEPTANCE_RULE_DOC;

// What the rule gets besides the arrays: the keyed uniforms of the reference's random stream
// (recorded as the step's draws), the tree's parents, the target's logits and the sampling.
struct AcceptanceContext {
  uint64_t seed = 0;
  uint32_t sequence = 0;
  int32_t root_position = 0;
  SamplingParams sampling;
  std::vector<int32_t> depths;  // (N + 1) depth of each row's point: row 0 the root (0), row 1 + n node n
  pybind11::object parents, target_logits;
  std::vector<RandomDraw> draws;
};

// Registers specdec.AcceptanceContext on `mod`.
void bind_acceptance_context(pybind11::module_& mod);

class PythonAcceptor final : public TokenAcceptor {
 public:
  // `rule` must be callable (checked here); the acceptor must be made and destroyed holding the GIL.
  explicit PythonAcceptor(pybind11::object rule);
  std::string name() const override { return "python"; }
  // Takes the GIL for the call; the rule's own exception propagates unchanged, a malformed return
  // value raises specdec::Error naming what was wrong.
  VerifyResult verify(const VerifyInput& input) const override;

 private:
  pybind11::object rule_;
};

}  // namespace specdec::python
