#include "experiments/validation/layer_departure.hpp"

#include <cmath>

#include "experiments/validation/row_comparison.hpp"
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

}  // namespace specdec::validation
