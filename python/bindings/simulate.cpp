#include "python/bindings/simulate.hpp"

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "python/bindings/conversions.hpp"
#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"
#include "reference/decoding/generation.hpp"
#include "reference/drafting/draft_limits.hpp"
#include "reference/drafting/tree_choices.hpp"
#include "reference/methods/method_spec.hpp"
#include "simulator/acceptance.hpp"
#include "simulator/method.hpp"
#include "simulator/model_shape.hpp"
#include "simulator/prediction_json.hpp"
#include "simulator/predictor.hpp"
#include "simulator/spec_json.hpp"
#include "simulator/spec_library.hpp"
#include "simulator/tree_shape.hpp"

namespace specdec::python {

namespace {

using namespace specdec::sim;

std::vector<double> double_list(const py::object& o, const std::string& name) {
  if (py::isinstance<py::str>(o) || !py::isinstance<py::sequence>(o))
    throw Error("simulate: " + name + " must be a list of numbers");
  std::vector<double> v;
  for (py::handle x : o.cast<py::sequence>()) {
    if (!py::isinstance<py::float_>(x) && !py::hasattr(x, "__index__") && !py::hasattr(x, "__float__"))
      throw Error("simulate: " + name + " must hold numbers, got " + py::repr(x).cast<std::string>());
    v.push_back(x.cast<double>());
  }
  if (v.empty()) throw Error("simulate: " + name + " is empty");
  return v;
}

// The scenario of the keyword arguments, checked as `specdec simulate` checks its options (the
// option names in the messages are the keywords').
py::object simulate(const std::string& model, const std::string& hardware, const py::object& engine, const py::object& drafter,
                    const py::object& method, int k, const py::object& alpha, const py::object& acceptance,
                    const py::object& acceptance_by_depth, const py::object& al, const py::object& tree, int batch, int tp,
                    int prompt_len, int output_len, const py::object& dtype, bool breakdown,
                    const std::vector<std::filesystem::path>& specs_dirs) {
  for (const auto& d : specs_dirs)
    if (!std::filesystem::is_directory(d)) throw Error("simulate: specs_dirs: '" + d.string() + "' is not a directory");
  const SpecLibrary specs(specs_dirs);
  Scenario s;
  s.target = specs.model(model);
  s.hardware = specs.hardware(hardware);
  s.engine = specs.engine_for(engine.is_none() ? "" : engine.cast<std::string>(), s.hardware);
  check_input_limit("batch", "the batch size", batch, kMaxSimulatedBatch);
  check_input_limit("tp", "the tensor-parallel degree", tp, kMaxTensorParallel);
  check_input_limit("prompt_len", "the prompt length", prompt_len, kMaxPositions);
  check_input_limit("output_len", "the output length", output_len, kMaxPositions);
  s.workload.batch = batch;
  s.workload.tp = tp;
  s.workload.prompt_len = prompt_len;
  s.workload.output_len = output_len;
  if (!dtype.is_none()) s.workload.dtype = normalize_dtype(dtype.cast<std::string>(), "dtype");
  if (s.workload.tp > s.hardware.devices_per_instance)
    throw Error("simulate: tp " + std::to_string(s.workload.tp) + " exceeds the " + std::to_string(s.hardware.devices_per_instance) +
                " devices of one " + s.hardware.name + " instance");
  if (!drafter.is_none()) {
    s.drafter = specs.drafter(drafter.cast<std::string>(), s.target);
    s.plan.method = s.drafter->method;
  }
  if (!method.is_none()) {
    const MethodSpec ms = parse_method_text(method.cast<std::string>(), "method");
    const Method m = parse_method(ms.name, "method");
    if (m == Method::sequential) {
      s.drafter.reset();
    } else if (!s.drafter && draft_free(m)) {
      const auto names = specs.names("drafters");
      if (std::find(names.begin(), names.end(), ms.name) != names.end()) s.drafter = specs.drafter(ms.name, s.target);
    } else if (!s.drafter) {
      throw Error("simulate: method " + method_name(m) + " needs drafter= (a drafter spec name or path; specdec simulate --list)");
    }
    s.plan.method = m;
    if (ms.params.contains("nodes")) {
      const nlohmann::json& n = ms.params.at("nodes");
      const double v = n.is_number() ? n.get<double>() : -1.0;
      if (!(v >= 1 && v <= kMaxDraftNodes && v == static_cast<int>(v)))
        throw Error("simulate: method: nodes must be an integer in [1, " + std::to_string(kMaxDraftNodes) + "], got " + n.dump());
      s.plan.nodes = static_cast<int>(v);
    }
  }
  const int given = !alpha.is_none() + !acceptance.is_none() + !acceptance_by_depth.is_none() + !al.is_none();
  if (given > 1) throw Error("simulate: give one acceptance model: alpha, acceptance, acceptance_by_depth or al");
  if (!alpha.is_none()) s.acceptance = iid_acceptance(alpha.cast<double>());
  if (!acceptance.is_none()) s.acceptance = conditional_acceptance(double_list(acceptance, "acceptance"));
  if (!acceptance_by_depth.is_none())
    s.acceptance = sim::acceptance_by_depth(double_list(acceptance_by_depth, "acceptance_by_depth"));
  if (!al.is_none()) s.measured_tokens_per_step = al.cast<double>();
  check_draft_limit("k", "K", k, kMaxDraftDepth);
  s.plan.k = k;
  if (!tree.is_none()) {
    if (py::isinstance<py::str>(tree)) {
      s.plan.tree = builtin_tree(tree.cast<std::string>());
    } else {
      const nlohmann::json paths = nlohmann::json::parse(py::module_::import("json").attr("dumps")(tree).cast<std::string>());
      s.plan.tree = make_tree_shape(get_rank_paths(paths, "tree"), "tree");
    }
    if (!acceptance_by_depth.is_none()) {
      // Measured on this tree: AL = 1 + sum over depths of P(accepted >= d), one entry per depth.
      const std::vector<double> reached = double_list(acceptance_by_depth, "acceptance_by_depth");
      if (static_cast<int>(reached.size()) != s.plan.tree->max_depth())
        throw Error("simulate: acceptance_by_depth gives " + std::to_string(reached.size()) + " depths, the tree has " +
                    std::to_string(s.plan.tree->max_depth()) + ": a tree's table is measured on that tree, one entry per depth");
      double v = 1.0;
      for (double r : reached) v += r;
      s.measured_tokens_per_step = v;
    }
  }
  if (s.plan.method != Method::sequential && !s.acceptance && !s.measured_tokens_per_step)
    throw Error("simulate: speculative decoding needs an acceptance model: alpha, acceptance, acceptance_by_depth or al");
  const Prediction p = predict(s);
  nlohmann::json out;
  out["scenario"] = scenario_json(s);
  out["prediction"] = prediction_json(p, breakdown);
  return json_to_python(out);
}

}  // namespace

void bind_simulate(py::module_& mod) {
  mod.def("simulate", &simulate, py::arg("model"), py::arg("hardware"), py::kw_only(), py::arg("engine") = py::none(),
          py::arg("drafter") = py::none(), py::arg("method") = py::none(), py::arg("k") = 4, py::arg("alpha") = py::none(),
          py::arg("acceptance") = py::none(), py::arg("acceptance_by_depth") = py::none(), py::arg("al") = py::none(),
          py::arg("tree") = py::none(), py::arg("batch") = 1, py::arg("tp") = 1, py::arg("prompt_len") = 512,
          py::arg("output_len") = 256, py::arg("dtype") = py::none(), py::arg("breakdown") = false,
          py::arg("specs_dirs") = std::vector<std::filesystem::path>{},
          "Predicts TTFT, TPOT, throughput and speedup of one decoding configuration, as `specdec simulate --json` does:\n"
          "model, hardware, engine, drafter: spec names or JSON paths (`specdec simulate --list`); method: as --method\n"
          "(default: the drafter's, else sequential); k = K; the acceptance model: alpha (i.i.d.), acceptance (per-position\n"
          "conditional rates a1, a2, ...), acceptance_by_depth (measured P(accepted >= d)) or al (a measured AL); tree: a\n"
          "built-in name (mc_sim_7b_63, chain<K>) or rank paths [[0], [1], [0, 0]]; batch, tp, prompt_len, output_len,\n"
          "dtype: the workload; breakdown=True adds the per-operator costs; specs_dirs: extra spec directories.\n"
          "Returns {'scenario': dict, 'prediction': dict} with the keys `specdec simulate --json` prints.");
}

}  // namespace specdec::python
