#include "python/bindings/acceptance_rule.hpp"

#include <pybind11/numpy.h>

#include <string>

#include "python/bindings/conversions.hpp"
#include "reference/core/error.hpp"
#include "reference/sampling/sampler.hpp"

namespace specdec::python {

const char* const ACCEPTANCE_RULE_DOC = R"(An acceptance rule: rule(draft_tokens, draft_probs, target_probs, ctx) -> (accepted, next_token).

Called once per verification step of a speculative run, in place of the built-in rule (lossless
rejection sampling under sampling="sample", else matching the target's choice), with N draft
nodes and the target vocabulary V:

  draft_tokens  int32 (N,): the draft's tokens in node order (a chain: node i at depth i + 1).
  draft_probs   float64 (N + 1, V) or None: row 0 the distribution the depth-1 tokens were drawn
                from, row 1 + n the one node n's children were drawn from (NaN where nothing was
                drawn); None when the drafter chose deterministically (argmax / top-k: one-hot q).
  target_probs  float64 (N + 1, V): the target's distribution p after temperature, top-k and
                top-p (greedy: one-hot at the argmax), row 0 at the pending token (it judges the
                depth-1 tokens), row 1 + n after node n.
  ctx           specdec.AcceptanceContext: ctx.uniform(depth, purpose, index=0) the reference's
                keyed uniform in [0, 1) at position ctx.root_position + depth (purpose "accept",
                "residual", "sample", ...; the built-in rule draws "accept" for the test of the
                j-th child with index j, "residual" after a rejection and "sample" for the bonus
                token, each with index 0 unless stated); every draw is recorded as the step's
                uniforms. Also ctx.parents int32 (N,) (-1 = the root), ctx.target_logits float32
                (N + 1, V), ctx.root_position, ctx.sequence, ctx.seed, ctx.sampling (dict) and
                ctx.target_choice(row) (the token sequential decoding picks from that row).

Returns (accepted, next_token): `accepted` an int L (the first L nodes of a chain; 0 for any draft)
or a sequence of node ids (the accepted path from the root down, each a child of the one before),
and `next_token` an int in [0, V): the correction after the path, or the bonus token when the path
ends at a leaf. The step emits the accepted nodes' tokens, then next_token. The step's recorded
decisions are derived: 1 per accepted node, then 0 for the first child of the node where the
path stops (a chain's decisions exactly).)";

namespace {

RandomPurpose purpose_of(const py::object& purpose) {
  if (py::isinstance<py::str>(purpose)) {
    const std::string s = purpose.cast<std::string>();
    for (RandomPurpose p : {RandomPurpose::sample, RandomPurpose::accept, RandomPurpose::residual, RandomPurpose::gumbel,
                            RandomPurpose::tree, RandomPurpose::draft, RandomPurpose::forced})
      if (to_string(p) == s) return p;
    throw Error("AcceptanceContext.uniform: unknown purpose '" + s +
                "'; expected sample, accept, residual, gumbel, tree, draft or forced");
  }
  throw Error("AcceptanceContext.uniform: purpose must be a string (e.g. 'accept'), not " +
              py::str(py::type::of(purpose).attr("__name__")).cast<std::string>());
}

// An exact integer (Python int or numpy integer; not bool or float) or an error naming `what`.
int64_t exact_int(const py::handle& o, const std::string& what) {
  if (py::isinstance<py::bool_>(o) || !py::hasattr(o, "__index__")) {
    throw Error(what + " must be an integer, got " + py::str(py::type::of(o).attr("__name__")).cast<std::string>() + " " +
                py::repr(o).cast<std::string>());
  }
  return py::reinterpret_steal<py::int_>(PyNumber_Index(o.ptr())).cast<int64_t>();
}

const float* row(const Matrix& m, int r) { return m.data() + static_cast<std::ptrdiff_t>(r) * m.cols(); }

}  // namespace

void bind_acceptance_context(py::module_& mod) {
  py::class_<AcceptanceContext, std::shared_ptr<AcceptanceContext>>(
      mod, "AcceptanceContext", "What an acceptance rule gets besides the arrays (see specdec.generate's acceptance=)")
      .def("uniform",
           [](AcceptanceContext& c, int depth, const py::object& purpose, int64_t index) {
             const int N = static_cast<int>(c.depths.size()) - 1;
             if (depth < 0 || depth > N)
               throw Error("AcceptanceContext.uniform: depth " + std::to_string(depth) + " is outside [0, " + std::to_string(N) +
                           "] (0 = the depth-1 tokens' position, N = " + std::to_string(N) + " draft nodes)");
             if (index < 0 || index > 0xffffffffLL) throw Error("AcceptanceContext.uniform: index must be in [0, 2^32)");
             c.draws.push_back(draw_uniform(c.seed, c.sequence, static_cast<uint32_t>(c.root_position + depth),
                                            purpose_of(purpose), static_cast<uint32_t>(index)));
             return c.draws.back().value;
           },
           py::arg("depth"), py::arg("purpose"), py::arg("index") = 0,
           "The keyed uniform in [0, 1) at position root_position + depth for (purpose, index), as the built-in rule draws it")
      .def("target_choice",
           [](const AcceptanceContext& c, int r) {
             const py::array_t<float> logits = c.target_logits.cast<py::array_t<float>>();
             if (r < 0 || r >= logits.shape(0))
               throw Error("AcceptanceContext.target_choice: row " + std::to_string(r) + " is outside [0, " +
                           std::to_string(logits.shape(0)) + ")");
             const int V = static_cast<int>(logits.shape(1));
             return sample_token(logits.data() + static_cast<std::ptrdiff_t>(r) * V, V, c.sampling, c.sequence,
                                 static_cast<uint32_t>(c.root_position + c.depths[static_cast<std::size_t>(r)]));
           },
           py::arg("row"), "The token sequential decoding picks from target row `row` (greedy: argmax; coupled: Gumbel-max)")
      .def_readonly("parents", &AcceptanceContext::parents, "int32 (N,): parent node of each draft node, -1 = the root")
      .def_readonly("target_logits", &AcceptanceContext::target_logits, "float32 (N + 1, V)")
      .def_readonly("root_position", &AcceptanceContext::root_position, "absolute position of the depth-1 tokens")
      .def_readonly("sequence", &AcceptanceContext::sequence)
      .def_readonly("seed", &AcceptanceContext::seed)
      .def_property_readonly("sampling", [](const AcceptanceContext& c) {
        py::dict d;
        d["mode"] = to_string(c.sampling.mode);
        d["temperature"] = c.sampling.temperature;
        d["top_k"] = c.sampling.top_k;
        d["top_p"] = c.sampling.top_p;
        return d;
      });
}

PythonAcceptor::PythonAcceptor(py::object rule) : rule_(std::move(rule)) {
  if (!PyCallable_Check(rule_.ptr())) {
    throw Error("acceptance must be a callable rule(draft_tokens, draft_probs, target_probs, ctx) -> (accepted, next_token), not " +
                py::str(py::type::of(rule_).attr("__name__")).cast<std::string>());
  }
}

VerifyResult PythonAcceptor::verify(const VerifyInput& in) const {
  if (!in.tree || !in.target_logits) throw Error("acceptance rule: the draft tree and the target logits are required");
  const DraftTree& tree = *in.tree;
  const Matrix& logits = *in.target_logits;
  const int N = tree.size(), V = static_cast<int>(logits.cols());
  tree.validate(V);
  if (logits.rows() != N + 1) throw Error("acceptance rule: target logits have " + std::to_string(logits.rows()) + " rows for " +
                                          std::to_string(N) + " draft nodes");
  py::gil_scoped_acquire gil;
  auto ctx = std::make_shared<AcceptanceContext>();
  ctx->seed = in.sampling.seed;
  ctx->sequence = in.sequence;
  ctx->root_position = in.root_position;
  ctx->sampling = in.sampling;
  ctx->depths.push_back(0);
  for (int n = 0; n < N; ++n) ctx->depths.push_back(tree.depth(n));
  ctx->parents = int_array(tree.parents);
  ctx->target_logits = to_numpy(logits);

  std::vector<std::vector<double>> p;  // (N + 1, V)
  for (int r = 0; r <= N; ++r) p.push_back(probabilities(row(logits, r), V, in.sampling));
  py::object q = py::none();
  if (in.draft_probs && !in.draft_probs->empty()) q = double_rows(*in.draft_probs, V);

  const py::object ret = rule_(int_array(tree.tokens), q, double_rows(p, V), ctx);

  const std::string what = "acceptance rule returned " + py::repr(ret).cast<std::string>() + ": ";
  if (!py::isinstance<py::sequence>(ret) || py::isinstance<py::str>(ret) || py::len(ret) != 2) {
    throw Error(what + "expected a pair (accepted, next_token): accepted an int or a list of node ids, next_token a token id");
  }
  const py::sequence pair = ret.cast<py::sequence>();
  VerifyResult r;
  const py::object accepted = pair[0];
  if (py::isinstance<py::sequence>(accepted) || py::isinstance<py::array>(accepted)) {
    const std::vector<int32_t> path = int_vector(accepted, "acceptance rule: the accepted path");
    int parent = -1;
    for (std::size_t i = 0; i < path.size(); ++i) {
      const int n = path[i];
      if (n < 0 || n >= N) throw Error(what + "node " + std::to_string(n) + " is not a draft node [0, " + std::to_string(N) + ")");
      if (tree.parents[static_cast<std::size_t>(n)] != parent)
        throw Error(what + "node " + std::to_string(n) + " (path entry " + std::to_string(i) + ") is not a child of " +
                    (parent < 0 ? std::string("the root") : "node " + std::to_string(parent)) +
                    ": the accepted path runs from the root down, each node a child of the one before");
      r.accepted_nodes.push_back(n);
      parent = n;
    }
  } else {
    const int64_t L = exact_int(accepted, "acceptance rule: accepted");
    if (L < 0 || L > N) throw Error(what + "accepted = " + std::to_string(L) + " is outside [0, " + std::to_string(N) + "] (N draft nodes)");
    if (L > 0 && !tree.is_chain())
      throw Error(what + "the draft is a tree, so an accepted length is ambiguous: return the accepted node ids, root first");
    for (int n = 0; n < L; ++n) r.accepted_nodes.push_back(n);
  }
  const int64_t next = exact_int(pair[1], "acceptance rule: next_token");
  if (next < 0 || next >= V) throw Error(what + "next_token " + std::to_string(next) + " is outside the vocabulary [0, " + std::to_string(V) + ")");

  for (int n : r.accepted_nodes) {
    r.emitted.push_back(tree.tokens[static_cast<std::size_t>(n)]);
    r.decisions.push_back(1);
    r.decision_nodes.push_back(n);
  }
  r.emitted.push_back(static_cast<int32_t>(next));
  const std::vector<int> children = tree.children(r.accepted_nodes.empty() ? -1 : r.accepted_nodes.back());
  if (children.empty()) {
    r.bonus_token = static_cast<int32_t>(next);
  } else {
    r.decisions.push_back(0);
    r.decision_nodes.push_back(children.front());
  }
  r.draws = ctx->draws;
  return r;
}

}  // namespace specdec::python
