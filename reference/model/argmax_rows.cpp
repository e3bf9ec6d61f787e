#include "reference/model/argmax_rows.hpp"

#include "reference/sampling/sampler.hpp"

namespace specdec {

void apply_argmax_only(const ForwardRequest& request, ForwardResult& result) {
  if (!request.argmax_only) return;
  const int V = static_cast<int>(result.logits.cols());
  result.argmax.resize(static_cast<std::size_t>(result.logits.rows()));
  for (Eigen::Index r = 0; r < result.logits.rows(); ++r)
    result.argmax[static_cast<std::size_t>(r)] = argmax(result.logits.row(r).data(), V);
  result.logits.resize(0, V);
}

}  // namespace specdec
