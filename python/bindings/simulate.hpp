#pragma once
// specdec.simulate: one scenario of the cost simulator (simulator/), priced as `specdec simulate
// --json` prices it, returned as the same dict ({"scenario": ..., "prediction": ...}).
#include <pybind11/pybind11.h>

namespace specdec::python {

// Registers specdec._core.simulate on `mod`.
void bind_simulate(pybind11::module_& mod);

}  // namespace specdec::python
