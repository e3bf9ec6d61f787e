#pragma once
// Values between C++ and Python shared by the binding files: JSON, text that need not be UTF-8,
// integer sequences in and numpy arrays out.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reference/core/tensor.hpp"

namespace specdec::python {

namespace py = pybind11;

py::object json_to_python(const nlohmann::json& j);

// Text that need not be valid UTF-8 (a byte-level model can stop inside a character): invalid
// bytes become U+FFFD, as in `specdec generate --json`.
py::str utf8_text(const std::string& s);

std::string dtype_name(const py::array& a);

// A 1-D array of integers (list, tuple or numpy array of an integer dtype) as int32 values; an
// error names `name`.
std::vector<int32_t> int_vector(const py::handle& obj, const std::string& name);

// (R, C) float32 copy of a matrix.
py::array_t<float> to_numpy(const Matrix& m);

// (N) copies as numpy arrays: token ids and counts are int32, probabilities float64.
py::array_t<int32_t> int_array(const std::vector<int32_t>& v);
py::array_t<uint8_t> byte_array(const std::vector<uint8_t>& v);
py::array_t<double> double_array(const std::vector<double>& v);

// (R, C) float64 array of R rows of length C; an empty row (no distribution there) becomes NaN.
py::array_t<double> double_rows(const std::vector<std::vector<double>>& rows, int cols);

}  // namespace specdec::python
