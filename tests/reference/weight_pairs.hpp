#pragma once
// Tensor-by-tensor comparison of weights, shared by the checkpoint and drafter-head round-trip
// tests: a visitor sees each pair of corresponding tensors as
// (name, rows_a, cols_a, rows_b, cols_b, data_a, data_b), vectors as one column.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>

#include "reference/model/weights.hpp"

namespace specdec::testing {

template <typename F>
void visit_pair(const std::string& name, const Matrix& x, const Matrix& y, F& f) {
  f(name, x.rows(), x.cols(), y.rows(), y.cols(), x.data(), y.data());
}
template <typename F>
void visit_pair(const std::string& name, const Vector& x, const Vector& y, F& f) {
  f(name, x.size(), Eigen::Index{1}, y.size(), Eigen::Index{1}, x.data(), y.data());
}

// Every tensor of two decoder layers, in declaration order, named "<prefix><tensor>".
template <typename F>
void for_each_layer_pair(const LayerWeights& x, const LayerWeights& y, const std::string& prefix, F& f) {
  visit_pair(prefix + "input_layernorm", x.input_layernorm, y.input_layernorm, f);
  visit_pair(prefix + "q_proj", x.q_proj, y.q_proj, f);
  visit_pair(prefix + "k_proj", x.k_proj, y.k_proj, f);
  visit_pair(prefix + "v_proj", x.v_proj, y.v_proj, f);
  visit_pair(prefix + "q_bias", x.q_bias, y.q_bias, f);
  visit_pair(prefix + "k_bias", x.k_bias, y.k_bias, f);
  visit_pair(prefix + "v_bias", x.v_bias, y.v_bias, f);
  visit_pair(prefix + "o_proj", x.o_proj, y.o_proj, f);
  visit_pair(prefix + "o_bias", x.o_bias, y.o_bias, f);
  visit_pair(prefix + "q_norm", x.q_norm, y.q_norm, f);
  visit_pair(prefix + "k_norm", x.k_norm, y.k_norm, f);
  visit_pair(prefix + "post_attention_layernorm", x.post_attention_layernorm, y.post_attention_layernorm, f);
  visit_pair(prefix + "gate_proj", x.gate_proj, y.gate_proj, f);
  visit_pair(prefix + "up_proj", x.up_proj, y.up_proj, f);
  visit_pair(prefix + "down_proj", x.down_proj, y.down_proj, f);
  visit_pair(prefix + "gate_bias", x.gate_bias, y.gate_bias, f);
  visit_pair(prefix + "up_bias", x.up_bias, y.up_bias, f);
  visit_pair(prefix + "down_bias", x.down_bias, y.down_bias, f);
}

// A visitor expecting the second tensor to equal the first after `round` (bitwise, per element).
template <typename Round>
auto equal_after(Round round, const std::string& label) {
  return [round, label](const std::string& n, Eigen::Index r1, Eigen::Index c1, Eigen::Index r2, Eigen::Index c2,
                        const float* x, const float* y) {
    ASSERT_EQ(r1, r2) << label << " " << n;
    ASSERT_EQ(c1, c2) << label << " " << n;
    for (Eigen::Index i = 0; i < r1 * c1; ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(round(x[i])), std::bit_cast<uint32_t>(y[i])) << label << " " << n << " element " << i;
    }
  };
}

}  // namespace specdec::testing
