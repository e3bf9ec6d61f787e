#pragma once
// specdec.simulate_sweep: `specdec simulate --sweep` from Python. The keywords become
// simulator/sweep_options values, checked and turned into a sweep by the library the command line
// uses; the rows come back as dicts with the CSV's columns, and out= writes the file the command
// line writes.
#include <pybind11/pybind11.h>

namespace specdec::python {

// Registers specdec._core.simulate_sweep on `mod`.
void bind_simulate_sweep(pybind11::module_& mod);

}  // namespace specdec::python
