#pragma once
// Batch-invariant building blocks of the reference forward.
//
// Every output element is produced by one call of `dot` over a contiguous row, in a reduction
// order fixed by the row length alone (eight interleaved partial sums, each product accumulated
// by one fused multiply-add, then a fixed pairwise combine; docs/exactness.md). Nothing depends on how many rows are processed together, on the rows' addresses or on
// the number of threads, so a T-token forward equals T one-token forwards bitwise.
#include "reference/core/tensor.hpp"

namespace specdec::ops {

// Σ a[i]·b[i] in the fixed order described above: a_l = fma(a[i], b[i], a_l) for i ≡ l (mod 8)
// over the first 8·⌊n/8⌋ elements, tail = fma(a[i], b[i], tail) over the rest, then
// (((a0+a4)+(a1+a5))+((a2+a6)+(a3+a7))) + tail.
float dot(const float* a, const float* b, int n);

// y = x · Wᵀ (+ bias). x: (T, in), W: (out, in), bias: (out) or empty; y: (T, out).
Matrix linear(const Matrix& x, const Matrix& w, const Vector& bias = Vector());

// RMSNorm per row: w ⊙ x / sqrt(mean(x²) + eps). x: (T, H), w: (H).
Matrix rms_norm(const Matrix& x, const Vector& w, double eps);
// The same on a single contiguous vector of length n, in place (used per attention head).
void rms_norm_inplace(float* x, const float* w, int n, double eps);

// silu(g) ⊙ u elementwise. g, u: (T, I).
Matrix swiglu(const Matrix& gate, const Matrix& up);

// Number of threads the reference uses (OpenMP if available); results never depend on it.
int num_threads();
void set_num_threads(int n);
// Loops with fewer multiply-adds than this run on one thread (a team wake-up costs more than it
// saves). Results are the same either way; tests set 0 to run every loop threaded.
long long parallel_work_threshold();
void set_parallel_work_threshold(long long work);

}  // namespace specdec::ops
