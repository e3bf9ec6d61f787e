#include <cuda_runtime.h>

#include <string>

#include "kernels/linear_rows.cuh"
#include "reference/core/error.hpp"

namespace specdec::cuda {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

// x: (rows, in), w: (out, in), b: (out) or null, y: (rows, out); grid (ceil(out / block), rows).
__global__ void linear_rows_kernel(const float* x, const float* w, const float* b, float* y, int in, int out) {
  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  const int t = blockIdx.y;
  if (o >= out) return;
  const float* a = x + static_cast<size_t>(t) * in;
  const float* c = w + static_cast<size_t>(o) * in;
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= in; i += 8) {
#pragma unroll
    for (int l = 0; l < 8; ++l) acc[l] = __fadd_rn(acc[l], __fmul_rn(a[i + l], c[i + l]));
  }
  float tail = 0.0f;
  for (; i < in; ++i) tail = __fadd_rn(tail, __fmul_rn(a[i], c[i]));
  const float left = __fadd_rn(__fadd_rn(acc[0], acc[4]), __fadd_rn(acc[1], acc[5]));
  const float right = __fadd_rn(__fadd_rn(acc[2], acc[6]), __fadd_rn(acc[3], acc[7]));
  const float r = __fadd_rn(__fadd_rn(left, right), tail);
  y[static_cast<size_t>(t) * out + o] = b ? __fadd_rn(r, b[o]) : r;
}

struct DeviceBuffer {
  float* p = nullptr;
  explicit DeviceBuffer(size_t n) {
    if (n) check(cudaMalloc(&p, n * sizeof(float)), "cudaMalloc");
  }
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

}  // namespace

bool device_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

void linear_rows(const float* x, const float* w, const float* bias, float* y, int rows, int in, int out) {
  if (rows < 0 || in < 0 || out < 0) throw Error("linear_rows: negative shape");
  if (rows == 0 || out == 0) return;
  const size_t nx = static_cast<size_t>(rows) * in, nw = static_cast<size_t>(out) * in, ny = static_cast<size_t>(rows) * out;
  DeviceBuffer dx(nx), dw(nw), db(bias ? out : 0), dy(ny);
  check(cudaMemcpy(dx.p, x, nx * sizeof(float), cudaMemcpyHostToDevice), "copy x");
  check(cudaMemcpy(dw.p, w, nw * sizeof(float), cudaMemcpyHostToDevice), "copy w");
  if (bias) check(cudaMemcpy(db.p, bias, out * sizeof(float), cudaMemcpyHostToDevice), "copy bias");
  const int block = 128;
  const dim3 grid((out + block - 1) / block, rows);
  linear_rows_kernel<<<grid, block>>>(dx.p, dw.p, bias ? db.p : nullptr, dy.p, in, out);
  check(cudaGetLastError(), "linear_rows_kernel launch");
  check(cudaMemcpy(y, dy.p, ny * sizeof(float), cudaMemcpyDeviceToHost), "copy y");
}

}  // namespace specdec::cuda
