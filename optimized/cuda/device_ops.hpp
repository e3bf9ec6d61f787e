#pragma once
// The host side of each kernel launch a forward makes, on a DeviceRuntime with its launch
// configuration: the weight type of a matrix picks the kernel template, T > 64 tokens go in
// chunks (every row is independent, so chunking changes no bit), and one token takes the
// one-token form. All pointers are device pointers; x: (T, in) with row stride ldx.
#include <cstdint>
#include <vector>

#include "optimized/cuda/device_weights.hpp"

namespace specdec::cuda {

// One output of a fused linear launch: y (T, w.rows) with row stride ldy = x · wᵀ + bias.
struct LinearOut {
  const DeviceMatrix* w;
  const float* bias;  // (w.rows) or null
  float* y;
  long long ldy;
};

// Up to three matrices of one weight type sharing the input (q/k/v in one launch).
void linear(DeviceRuntime& rt, const std::vector<LinearOut>& outs, const float* x, long long ldx, int T, int in);
// act (T, I) row stride ldact = silu(x·gᵀ + bg) ⊙ (x·uᵀ + bu).
void gate_up_swiglu(DeviceRuntime& rt, const DeviceMatrix& g, const DeviceMatrix& u, const float* bg, const float* bu,
                    const float* x, long long ldx, float* act, long long ldact, int T);
// y (T, table.cols) = rows ids[0, T) of the table, widened to fp32.
void embedding(DeviceRuntime& rt, const DeviceMatrix& table, const int32_t* ids, int T, float* y);
// RMSNorm of `rows` rows of width n: y = x / rms(x) ⊙ w.
void rms_norm(DeviceRuntime& rt, const float* x, long long ldx, const float* w, float* y, long long ldy, int rows, int n,
              double eps);

}  // namespace specdec::cuda
