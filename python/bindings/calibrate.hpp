#pragma once
// specdec.calibrate and specdec.evaluate: the simulator against measurements from Python, as
// `specdec simulate --calibrate` (fitting the specs' efficiency and overhead terms to measured step
// timings) and `--evaluate` (predicting published speedups it was never fitted to) do, through the
// same library (simulator/calibration_run, simulator/evaluation); each returns the command line's
// --json dict.
#include <pybind11/pybind11.h>

namespace specdec::python {

// Registers specdec._core.calibrate and specdec._core.evaluate on `mod`.
void bind_calibrate(pybind11::module_& mod);

}  // namespace specdec::python
