// Where inside a target forward two runs part (validation/layer_departure.hpp).
#include "validation/layer_departure.hpp"

#include <cmath>

#include "validation/row_comparison.hpp"
#include "reference/model/language_model.hpp"

namespace specdec::validation {

std::optional<LayerDeparture> first_layer_departure(const TargetLayersLayout& layout, int64_t rows, double bound,
                                                    const LayerStates& state) {
  const int64_t L = layout.num_layers, H = layout.hidden_size, U = static_cast<int64_t>(layout.substeps.size());
  for (int64_t l = 0; l < L; ++l) {
    for (int k = 0; k < 4; ++k) {  // a layer's sub-steps in forward order, as kLayerStateNames orders them
      for (int64_t u = 0; u < U; ++u) {
        if (layout.substeps[static_cast<std::size_t>(u)] != kLayerStateNames[k]) continue;
        LayerDeparture worst;
        worst.nmse = -1;
        for (int64_t i = 0; i < rows; ++i) {
          const auto [cand, ref] = state(i, l, u);
          if (!cand || !ref) return std::nullopt;
          const RowDifference d = compare_rows(cand, ref, static_cast<int>(H));
          if (d.nmse > worst.nmse || std::isnan(d.nmse)) worst.nmse = d.nmse, worst.row = static_cast<int>(i);
        }
        if (!(worst.nmse <= bound)) {
          worst.layer = static_cast<int>(l);
          worst.substep = kLayerStateNames[k];
          return worst;
        }
      }
    }
  }
  return std::nullopt;
}

std::optional<LayerDeparture> live_layer_departure(const Trace& recorded, std::size_t step, const ForwardRecord& live,
                                                   double bound) {
  const TargetLayersLayout& layout = recorded.target_layers;
  const StepRecord& r = recorded.steps[step];
  if (layout.num_layers == 0 || r.layer_row_nodes.empty()) return std::nullopt;
  const int64_t L = layout.num_layers, H = layout.hidden_size, U = static_cast<int64_t>(layout.substeps.size());
  if (live.layer_states.size() != static_cast<size_t>(4 * L)) return std::nullopt;  // a live backend without layer states
  const int64_t T = static_cast<int64_t>(live.tokens.size());
  const int64_t nodes = static_cast<int64_t>(r.draft_tokens.size());
  std::vector<int> substep_index;  // the trace's sub-steps as indices into kLayerStateNames
  for (const std::string& name : layout.substeps) {
    int k = -1;
    for (int i = 0; i < 4; ++i)
      if (name == kLayerStateNames[i]) k = i;
    substep_index.push_back(k);
  }
  // The forward's row of recorded row i: the root (node -1) or a draft node.
  auto forward_row = [&](int64_t i) {
    const int32_t node = r.layer_row_nodes[static_cast<size_t>(i)];
    return node < 0 ? T - 1 - nodes : T - nodes + node;
  };
  auto departure = first_layer_departure(
      layout, static_cast<int64_t>(r.layer_row_nodes.size()), bound,
      [&](int64_t i, int64_t l, int64_t u) -> std::pair<const float*, const float*> {
        const int k = substep_index[static_cast<size_t>(u)];
        const int64_t row = forward_row(i);
        if (k < 0 || row < 0 || row >= T) return {nullptr, nullptr};
        const Matrix& state = live.layer_states[static_cast<size_t>(4 * l + k)];
        if (state.cols() != H) return {nullptr, nullptr};
        return {r.layer_hidden.data() + ((i * L + l) * U + u) * H, state.row(static_cast<Eigen::Index>(row)).data()};
      });
  if (departure) departure->row = static_cast<int>(forward_row(departure->row));
  return departure;
}

std::optional<LayerDeparture> trace_layer_departure(const Trace& a, const Trace& b, std::size_t step, double bound) {
  const TargetLayersLayout& la = a.target_layers;
  const TargetLayersLayout& lb = b.target_layers;
  const StepRecord& x = a.steps[step];
  const StepRecord& y = b.steps[step];
  if (la.num_layers == 0 || la.num_layers != lb.num_layers || la.hidden_size != lb.hidden_size || la.substeps != lb.substeps) return std::nullopt;
  if (x.layer_row_nodes.empty() || x.layer_row_nodes != y.layer_row_nodes || x.layer_hidden.size() != y.layer_hidden.size()) return std::nullopt;
  const int64_t L = la.num_layers, H = la.hidden_size, U = static_cast<int64_t>(la.substeps.size());
  const int64_t R = static_cast<int64_t>(x.layer_row_nodes.size());
  if (static_cast<int64_t>(x.layer_hidden.size()) != R * L * U * H) return std::nullopt;
  return first_layer_departure(la, R, bound, [&](int64_t i, int64_t l, int64_t u) {
    const std::size_t at = static_cast<std::size_t>(((i * L + l) * U + u) * H);
    return std::pair<const float*, const float*>{y.layer_hidden.data() + at, x.layer_hidden.data() + at};
  });
}

}  // namespace specdec::validation
