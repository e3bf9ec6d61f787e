#include "python/bindings/conversions.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "reference/core/error.hpp"

namespace specdec::python {

py::object json_to_python(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

py::str utf8_text(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

std::string dtype_name(const py::array& a) { return py::str(a.dtype()).cast<std::string>(); }

std::vector<int32_t> int_vector(const py::handle& obj, const std::string& name) {
  if (py::isinstance<py::str>(obj) || py::isinstance<py::bytes>(obj)) {
    throw Error(name + " must be a sequence of integer ids, not a string");
  }
  py::array a;
  try {
    a = py::module_::import("numpy").attr("asarray")(obj);
  } catch (const py::error_already_set& e) {
    throw Error(name + " must be a 1-D sequence of integers (" + std::string(e.what()) + ")");
  }
  const char kind = a.dtype().kind();
  if (a.ndim() != 1) {
    throw Error(name + " must be 1-D, got an array of " + std::to_string(a.ndim()) + " dimensions");
  }
  if (a.size() > 0 && kind != 'i' && kind != 'u') {
    throw Error(name + " must hold integers, got dtype " + dtype_name(a));
  }
  auto v = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
  if (!v) throw Error(name + ": cannot read as int64");
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(v.size()));
  const int64_t* p = v.data();
  for (py::ssize_t i = 0; i < v.size(); ++i) {
    if (p[i] < std::numeric_limits<int32_t>::min() || p[i] > std::numeric_limits<int32_t>::max()) {
      throw Error(name + "[" + std::to_string(i) + "] = " + std::to_string(p[i]) + " does not fit in int32");
    }
    out.push_back(static_cast<int32_t>(p[i]));
  }
  if (kind == 'u' && a.size() > 0) {
    // uint64 values past int64 wrap in the cast above; recheck against the original.
    auto u = py::array_t<uint64_t, py::array::c_style | py::array::forcecast>::ensure(a);
    for (py::ssize_t i = 0; i < u.size(); ++i) {
      if (u.data()[i] > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
        throw Error(name + "[" + std::to_string(i) + "] = " + std::to_string(u.data()[i]) + " does not fit in int32");
      }
    }
  }
  return out;
}

py::array_t<float> to_numpy(const Matrix& m) {
  py::array_t<float> out({static_cast<py::ssize_t>(m.rows()), static_cast<py::ssize_t>(m.cols())});
  if (m.size() > 0) std::memcpy(out.mutable_data(), m.data(), sizeof(float) * static_cast<size_t>(m.size()));
  return out;
}

namespace {
template <typename Out, typename In>
py::array_t<Out> array_of(const std::vector<In>& v) {
  py::array_t<Out> out(static_cast<py::ssize_t>(v.size()));
  Out* p = out.mutable_data();
  for (std::size_t i = 0; i < v.size(); ++i) p[i] = static_cast<Out>(v[i]);
  return out;
}
}  // namespace

py::array_t<int32_t> int_array(const std::vector<int32_t>& v) { return array_of<int32_t>(v); }
py::array_t<uint8_t> byte_array(const std::vector<uint8_t>& v) { return array_of<uint8_t>(v); }
py::array_t<double> double_array(const std::vector<double>& v) { return array_of<double>(v); }

py::array_t<double> double_rows(const std::vector<std::vector<double>>& rows, int cols) {
  py::array_t<double> out({static_cast<py::ssize_t>(rows.size()), static_cast<py::ssize_t>(cols)});
  double* p = out.mutable_data();
  for (std::size_t r = 0; r < rows.size(); ++r) {
    double* row = p + r * static_cast<std::size_t>(cols);
    if (rows[r].empty()) {
      std::fill(row, row + cols, std::numeric_limits<double>::quiet_NaN());
    } else if (static_cast<int>(rows[r].size()) == cols) {
      std::memcpy(row, rows[r].data(), sizeof(double) * static_cast<std::size_t>(cols));
    } else {
      throw Error("a distribution has " + std::to_string(rows[r].size()) + " entries, expected " + std::to_string(cols));
    }
  }
  return out;
}

}  // namespace specdec::python
