#pragma once
// Python keyword arguments as the simulator's option values, shared by the simulator's bindings
// (simulate, simulate_sweep, calibrate): each conversion checks the Python type and names the
// keyword in its error; which options go together, and every bound, is the simulator's to check.
// Also the first docstring line the bindings write for a function taking **kwargs, which help()
// shows and specdec's keyword check (python/specdec/__init__.py) reads.
#include <pybind11/pybind11.h>

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "simulator/spec_library.hpp"

namespace specdec::python {

namespace py = pybind11;

std::string shown(const py::handle& x);  // repr(x)
bool is_list(const py::handle& x);       // a sequence that is not a string
double number(const py::handle& x, const std::string& name);
int integer(const py::handle& x, const std::string& name);
std::string text(const py::handle& x, const std::string& name);
// A path: a string or an os.PathLike.
std::string path_text(const py::handle& x, const std::string& name);
// A spec name or a path to a spec file: a string or an os.PathLike.
std::string name_or_path(const py::handle& x, const std::string& name);
// A list of numbers (not empty).
std::vector<double> number_list(const py::handle& x, const std::string& name);
// A number or a list of numbers (not empty).
std::vector<double> numbers(const py::handle& x, const std::string& name);
// An integer or a list of integers (not empty).
std::vector<int> integer_list(const py::handle& x, const std::string& name);
// A string or a list of strings (not empty).
std::vector<std::string> text_list(const py::handle& x, const std::string& name);
// A path or a list of paths (not empty).
std::vector<std::string> path_list(const py::handle& x, const std::string& name);
// A name or a path as it is; lists and dicts as the JSON the command line would be given.
std::string json_text(const py::handle& x, const std::string& name, const std::string& expected);
// A dict {K: AL} (acceptance_table).
std::map<int, double> al_by_k(const py::handle& x, const std::string& name);
// Python's truth value of x.
bool truth(const py::handle& x);

// The spec library with the directories of the `specs_dirs` keyword (a list), if given.
sim::SpecLibrary spec_library(const py::kwargs& kw);

// One keyword of a function taking **kwargs: its name, type and default as its signature shows
// them (default nullptr: required).
struct KeywordDoc {
  const char* name;
  const char* type;
  const char* default_text;
};
// "name(positional, *, k: type = default, ...) -> dict".
std::string signature_line(const std::string& function, const std::string& positional, const std::vector<KeywordDoc>& keywords);
// Throws TypeError, as Python does, for a keyword `function` does not take.
void check_keywords(const std::string& function, const py::kwargs& kw, const std::vector<KeywordDoc>& keywords);

}  // namespace specdec::python
