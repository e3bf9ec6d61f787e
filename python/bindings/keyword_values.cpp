#include "python/bindings/keyword_values.hpp"

#include <climits>
#include <filesystem>

#include "reference/core/error.hpp"

namespace specdec::python {

std::string shown(const py::handle& x) { return py::repr(x).cast<std::string>(); }

bool is_list(const py::handle& x) { return !py::isinstance<py::str>(x) && py::isinstance<py::sequence>(x); }

namespace {

bool is_number(const py::handle& x) {
  return !py::isinstance<py::str>(x) && (py::isinstance<py::float_>(x) || py::hasattr(x, "__index__") || py::hasattr(x, "__float__"));
}

}  // namespace

double number(const py::handle& x, const std::string& name) {
  if (!is_number(x)) throw Error(name + " must be a number, got " + shown(x));
  return x.cast<double>();
}

int integer(const py::handle& x, const std::string& name) {
  if (py::isinstance<py::str>(x) || !py::hasattr(x, "__index__")) throw Error(name + " must be an integer, got " + shown(x));
  const long long v = x.cast<long long>();
  if (v > INT_MAX || v < INT_MIN) throw Error(name + ": " + std::to_string(v) + " is out of range");
  return static_cast<int>(v);
}

std::string text(const py::handle& x, const std::string& name) {
  if (!py::isinstance<py::str>(x)) throw Error(name + " must be a string, got " + shown(x));
  return x.cast<std::string>();
}

namespace {

std::string fspath(const py::handle& x, const std::string& name, const std::string& expected) {
  if (!py::isinstance<py::str>(x) && !py::hasattr(x, "__fspath__")) throw Error(name + " must be " + expected + ", got " + shown(x));
  const py::object p = py::module_::import("os").attr("fspath")(x);
  if (!py::isinstance<py::str>(p)) throw Error(name + " must be " + expected + ", got " + shown(x));
  return p.cast<std::string>();
}

}  // namespace

std::string path_text(const py::handle& x, const std::string& name) {
  return fspath(x, name, "a path (a string or os.PathLike)");
}

std::string name_or_path(const py::handle& x, const std::string& name) {
  return fspath(x, name, "a spec name or a path (a string or os.PathLike)");
}

std::vector<double> number_list(const py::handle& x, const std::string& name) {
  if (!is_list(x)) throw Error(name + " must be a list of numbers, got " + shown(x));
  std::vector<double> v;
  for (py::handle e : x.cast<py::sequence>()) {
    if (!is_number(e)) throw Error(name + " must hold numbers, got " + shown(e));
    v.push_back(e.cast<double>());
  }
  if (v.empty()) throw Error(name + " is empty");
  return v;
}

std::vector<double> numbers(const py::handle& x, const std::string& name) {
  if (!is_list(x)) return {number(x, name)};
  return number_list(x, name);
}

namespace {

// One value, or a non-empty list of them, each read by `element` (which names the keyword in its errors).
template <typename T, typename Element>
std::vector<T> one_or_list(const py::handle& x, const std::string& name, Element element) {
  if (!is_list(x)) return {element(x, name)};
  std::vector<T> v;
  for (py::handle e : x.cast<py::sequence>()) v.push_back(element(e, name));
  if (v.empty()) throw Error(name + " is empty");
  return v;
}

}  // namespace

std::vector<int> integer_list(const py::handle& x, const std::string& name) { return one_or_list<int>(x, name, integer); }

std::vector<std::string> text_list(const py::handle& x, const std::string& name) {
  return one_or_list<std::string>(x, name, text);
}

std::vector<std::string> path_list(const py::handle& x, const std::string& name) {
  return one_or_list<std::string>(x, name, path_text);
}

std::string json_text(const py::handle& x, const std::string& name, const std::string& expected) {
  if (py::isinstance<py::str>(x)) return x.cast<std::string>();
  try {
    return py::module_::import("json").attr("dumps")(x).cast<std::string>();
  } catch (const py::error_already_set&) {
    throw Error(name + " must be " + expected + ", got " + shown(x));
  }
}

std::map<int, double> al_by_k(const py::handle& x, const std::string& name) {
  if (!py::isinstance<py::dict>(x)) throw Error(name + " must be a dict {K: AL}, got " + shown(x));
  std::map<int, double> t;
  for (auto [k, al] : x.cast<py::dict>()) t[integer(k, name + " (K)")] = number(al, name + " (AL)");
  return t;
}

bool truth(const py::handle& x) {
  const int t = PyObject_IsTrue(x.ptr());
  if (t < 0) throw py::error_already_set();
  return t == 1;
}

sim::SpecLibrary spec_library(const py::kwargs& kw) {
  std::vector<std::filesystem::path> dirs;
  if (kw.contains("specs_dirs") && !kw["specs_dirs"].is_none()) {
    const py::object d = kw["specs_dirs"];
    if (!is_list(d)) throw Error("specs_dirs must be a list of directories, got " + shown(d));
    for (py::handle x : d.cast<py::sequence>()) {
      const std::filesystem::path p = py::str(x).cast<std::string>();
      if (!std::filesystem::is_directory(p)) throw Error("specs_dirs: '" + p.string() + "' is not a directory");
      dirs.push_back(p);
    }
  }
  return sim::SpecLibrary(dirs);
}

std::string signature_line(const std::string& function, const std::string& positional, const std::vector<KeywordDoc>& keywords) {
  std::string s = function + "(" + positional + (positional.empty() ? "*" : ", *");
  for (const KeywordDoc& k : keywords) {
    s += std::string(", ") + k.name + ": " + k.type;
    if (k.default_text) s += std::string(" = ") + k.default_text;
  }
  return s + ") -> dict";
}

void check_keywords(const std::string& function, const py::kwargs& kw, const std::vector<KeywordDoc>& keywords) {
  for (auto item : kw) {
    const std::string name = item.first.cast<std::string>();
    bool known = false;
    for (const KeywordDoc& k : keywords) known = known || name == k.name;
    if (!known) throw py::type_error(function + "() got an unexpected keyword argument '" + name + "'");
  }
}

}  // namespace specdec::python
