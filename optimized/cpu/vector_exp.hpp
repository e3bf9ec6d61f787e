#pragma once
// exact::exp (reference/core/exact_math.hpp) eight lanes at a time with AVX2: the same IEEE
// operations in the same order, lane by lane, so the bits equal the scalar function's (and the
// reference's and the CUDA kernels'); the portable path calls the scalar function.

namespace specdec::cpu {

// out[i] = exact::exp(x[i] − shift), i < n (out may be x): softmax's numerators.
void exp_shifted(const float* x, float shift, int n, float* out);

}  // namespace specdec::cpu
