// Planted violations of the exactness contract, compiled to PTX with fast-math flags so that the
// PTX lint test can show it catches each kind: a contracted multiply-add, approximate division
// and exponential, flush-to-zero, and adds without an explicit rounding mode.
__global__ void planted_violations(const float* a, const float* b, float* y) {
  const int i = threadIdx.x;
  y[i] = a[i] * b[i] + y[i];  // contracted into fma under --fmad=true
  y[i + 32] = a[i] / b[i];    // div.approx / div.full under --use_fast_math
  y[i + 64] = __expf(a[i]);   // ex2.approx
}
