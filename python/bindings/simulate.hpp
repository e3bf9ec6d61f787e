#pragma once
// specdec.simulate, specdec.plan_capacity, specdec.simulate_policy and specdec.recommend_policy: the
// cost simulator (simulator/) from Python. The keywords become simulator/scenario_options values
// (and simulator/policy_mode's), built and checked by the library the command line uses, and the
// answer is the dict `specdec simulate --json` prints for the same options.
#include <pybind11/pybind11.h>

namespace specdec::python {

// Registers specdec._core.simulate, plan_capacity, simulate_policy and recommend_policy on `mod`.
void bind_simulate(pybind11::module_& mod);

}  // namespace specdec::python
