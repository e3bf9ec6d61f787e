#pragma once
// The execution context a kernel body sees on a GPU: indices, dynamic shared memory, the block
// barrier and full-warp shuffles. kernels/emulator/grid_emulator.hpp provides the same interface
// on the CPU, so one body (a functor with `template <class Ctx> void operator()(Ctx&) const`) runs
// both ways. Only nvcc compiles this header.
#include "kernels/exec/launch_shape.hpp"

namespace specdec::kernels {

struct DeviceContext {
  __device__ int thread() const { return static_cast<int>(threadIdx.x); }
  __device__ int block_dim() const { return static_cast<int>(blockDim.x); }
  __device__ int block_x() const { return static_cast<int>(blockIdx.x); }
  __device__ int block_y() const { return static_cast<int>(blockIdx.y); }
  __device__ int block_z() const { return static_cast<int>(blockIdx.z); }
  __device__ int lane() const { return static_cast<int>(threadIdx.x) & (kWarpSize - 1); }

  template <class T>
  __device__ T* shared() const {
    extern __shared__ __align__(16) unsigned char specdec_shared_memory[];
    return reinterpret_cast<T*>(specdec_shared_memory);
  }

  __device__ void sync() const { __syncthreads(); }
  // Every lane of the warp must call these together (full mask).
  __device__ float shfl_xor(float v, int mask) const { return __shfl_xor_sync(0xffffffffu, v, mask); }
  __device__ float shfl(float v, int src_lane) const { return __shfl_sync(0xffffffffu, v, src_lane); }
};

// The one __global__ entry every kernel goes through: the body is the kernel functor itself.
template <class Kernel>
__global__ void run_kernel(Kernel k) {
  DeviceContext ctx;
  k(ctx);
}

}  // namespace specdec::kernels
