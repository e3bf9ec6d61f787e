#include "kernels/cuda/launch.hpp"

#include <cuda_runtime.h>

#include "kernels/exec/device_context.cuh"
#include "reference/core/error.hpp"

namespace specdec::kernels::cuda {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

// The most threads per block run_kernel<Kernel> takes on the current device, read once.
template <class Kernel>
int max_threads() {
  static const int n = [] {
    cudaFuncAttributes a{};
    check(cudaFuncGetAttributes(&a, run_kernel<Kernel>), "cudaFuncGetAttributes");
    return a.maxThreadsPerBlock;
  }();
  return n;
}

template <class Kernel>
void launch_kernel(const Kernel& k, void* stream, const char* name) {
  const LaunchShape s = k.shape();
  if (s.grid.x == 0 || s.grid.y == 0 || s.grid.z == 0) return;  // nothing to compute
  if (s.block > max_threads<Kernel>())
    throw Error(std::string("CUDA: ") + name + ": " + std::to_string(s.block) + " threads per block; as compiled for " +
                "this device it takes at most " + std::to_string(max_threads<Kernel>()) +
                " (its registers); choose a smaller launch configuration");
  run_kernel<Kernel><<<dim3(s.grid.x, s.grid.y, s.grid.z), s.block, s.shared_bytes, static_cast<cudaStream_t>(stream)>>>(k);
  check(cudaGetLastError(), name);
}

}  // namespace

bool device_available(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) *why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
    cudaGetLastError();  // clear the sticky error of the failed query
    return false;
  }
  return true;
}

std::string device_description() {
  int dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
  return std::string(p.name) + " (sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", " +
         std::to_string(p.multiProcessorCount) + " SMs)";
}

KernelThreadLimits kernel_thread_limits() {
  using W = WeightType;
  KernelThreadLimits l;
  for (int n : {max_threads<Linear<W::kF32>>(), max_threads<Linear<W::kF32, 1>>(), max_threads<Linear<W::kBF16>>(),
                max_threads<Linear<W::kBF16, 1>>(), max_threads<Linear<W::kF16>>(), max_threads<Linear<W::kF16, 1>>(),
                max_threads<GateUpSwiglu<W::kF32>>(), max_threads<GateUpSwiglu<W::kF32, 1>>(),
                max_threads<GateUpSwiglu<W::kBF16>>(), max_threads<GateUpSwiglu<W::kBF16, 1>>(),
                max_threads<GateUpSwiglu<W::kF16>>(), max_threads<GateUpSwiglu<W::kF16, 1>>()})
    l.linear = n < l.linear ? n : l.linear;
  for (int n : {max_threads<Attention>(), max_threads<RaggedAttention>()}) l.attention = n < l.attention ? n : l.attention;
  return l;
}

#define SPECDEC_LAUNCH(...) \
  void launch(const __VA_ARGS__& k, void* stream) { launch_kernel(k, stream, #__VA_ARGS__); }

SPECDEC_KERNEL_TYPES(SPECDEC_LAUNCH)

#undef SPECDEC_LAUNCH

}  // namespace specdec::kernels::cuda
