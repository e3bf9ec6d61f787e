#pragma once
// Weights rounded to the precision they are stored in (F32, BF16 or F16): to nearest, ties to
// even, and widened back to fp32 (reference/core/half.hpp). Widening is exact, so the reference
// computing in fp32 with rounded weights is the same model as a backend or checkpoint that holds
// them narrow.
#include <cstddef>
#include <span>
#include <string>

#include "reference/core/tensor.hpp"
#include "reference/io/safetensors.hpp"
#include "reference/model/weights.hpp"

namespace specdec {

// Throws specdec::Error unless `precision` is F32, BF16 or F16; `where` names the caller.
void check_weight_precision(Dtype precision, const std::string& where);

// `v` rounded to `precision` and widened back to fp32 (F32: v itself).
float round_to_precision(float v, Dtype precision);
// Every element of data[0, n) rounded in place.
void round_to_precision(float* data, std::size_t n, Dtype precision);
// Every element of `m` rounded.
Matrix round_to_precision(const Matrix& m, Dtype precision);

// The narrowest of BF16, F16 and F32 that holds every element of every matrix in `ms` exactly:
// storing there changes no value (a head trained in BF16, or the LM head of a BF16 target, is read
// at two bytes per weight by the optimized backends).
Dtype lossless_precision(std::span<const Matrix* const> ms);

// Every tensor of `weights` rounded (matrices, norms and biases), as a checkpoint stored in
// `precision` holds them. F32 returns the weights as they are.
LlamaWeights round_weights(LlamaWeights weights, Dtype precision);

}  // namespace specdec
