#pragma once
// Linear layers over T tokens as one pass over the weights: every block of weight rows is read
// from memory once and serves all T tokens (the reason verifying K+1 draft tokens costs about as
// much as one token). OpenMP splits the output features statically; every output element is one
// dot product in the reference's order (dot_kernels.hpp), so neither the thread count nor T
// changes a result. Epilogues are fused: bias, residual add, SwiGLU.
#include <cstddef>
#include <string>

#include "optimized/cpu/packed_matrix.hpp"
#include "reference/core/tensor.hpp"

namespace specdec::cpu {

// y(t, o) = dot(x_t, w_o) + b_o, or with `accumulate` y(t, o) = y(t, o) + (dot(x_t, w_o) + b_o)
// (the reference's residual + linear(...)). bias: (out) or nullptr (then + 0.0f, as the
// reference). x: (T, w.cols()) at row stride ldx; y: (T, w.rows()) at row stride ldy.
void linear(const PackedMatrix& w, const float* bias, const float* x, std::size_t ldx, int T, float* y,
            std::size_t ldy, bool accumulate);

// Packs gate and up ([I, H] each) into one matrix whose blocks of four rows hold the gate and up
// rows of two features (g_f, g_f+1, u_f, u_f+1), so one block yields finished SwiGLU outputs.
PackedMatrix pack_gate_up(const Matrix& gate, const Matrix& up, Dtype precision, const std::string& name);
// The same from row readers of gate and up (each [I, cols]), a chunk of packed rows at a time.
PackedMatrix pack_gate_up(int I, int cols, const PackedMatrix::RowReader& gate, const PackedMatrix::RowReader& up,
                          Dtype precision, const std::string& name);

// act(t, f) = silu(g) · u with g = dot(x_t, gate_f) + bg_f, u = dot(x_t, up_f) + bu_f, exactly
// the reference's swiglu(linear(x, gate), linear(x, up)). gate_up from pack_gate_up; biases (I)
// or nullptr. x: (T, H) at stride ldx; act: (T, I) at stride ldact.
void linear_swiglu(const PackedMatrix& gate_up, const float* gate_bias, const float* up_bias, const float* x,
                   std::size_t ldx, int T, float* act, std::size_t ldact);

}  // namespace specdec::cpu
