#pragma once
// y = x · Wᵀ (+ bias) on the GPU with the reference's reduction order (reference/model/ops.hpp:
// eight interleaved partial sums, a fixed pairwise combine, then the tail), with every product
// and sum rounded separately (no fused multiply-add), so the result equals ops::linear bitwise.
// One thread per output element: a plain, checkable kernel that faster ones are measured against.
// The interface takes host pointers (row-major) so that it needs no Eigen in device code.

namespace specdec::cuda {

// True when a CUDA device is present and usable.
bool device_available();

// x: (rows, in), w: (out, in), bias: (out) or null, y: (rows, out); all host memory.
// Throws specdec::Error on a CUDA failure.
void linear_rows(const float* x, const float* w, const float* bias, float* y, int rows, int in, int out);

}  // namespace specdec::cuda
