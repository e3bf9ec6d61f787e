#pragma once
// The host side of ForwardRequest::argmax_only, for backends whose logits are on the host (the
// reference, the cpu backend): each requested row reduced to its greedy choice.
#include "reference/model/language_model.hpp"

namespace specdec {

// With request.argmax_only, replaces result.logits by each row's argmax (sampler.hpp: ties to the
// lower index; throws on a NaN or a row of only -inf); otherwise leaves the result as it is.
void apply_argmax_only(const ForwardRequest& request, ForwardResult& result);

}  // namespace specdec
