#pragma once
// specdec.simulate and specdec.plan_capacity: the cost simulator (simulator/) from Python. The
// keywords become simulator/scenario_options values, built and checked by the library the command
// line uses, and the answer is the dict `specdec simulate --json` prints for the same options.
#include <pybind11/pybind11.h>

namespace specdec::python {

// Registers specdec._core.simulate and specdec._core.plan_capacity on `mod`.
void bind_simulate(pybind11::module_& mod);

}  // namespace specdec::python
