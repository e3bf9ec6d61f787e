#pragma once
// Tensor aliases. Matrices are row-major so that a row (one token, or one output feature of a
// [out, in] weight) is contiguous, matching the safetensors layout.
#include <Eigen/Core>
#include <cstdint>

namespace specdec {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXf;
using IntVector = Eigen::Matrix<int32_t, Eigen::Dynamic, 1>;

}  // namespace specdec
