#pragma once
// The Device of tests/kernels/kernel_cases.hpp on a real GPU: allocations are filled with NaN
// bytes first, every launch is followed by a synchronize that surfaces kernel faults.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cuda/launch.hpp"
#include "reference/core/error.hpp"

namespace specdec::kernels {

class CudaDevice {
 public:
  CudaDevice() = default;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;
  ~CudaDevice() {
    for (void* p : allocations_) cudaFree(p);
  }

  template <class T>
  T* alloc(std::size_t n) {
    void* p = nullptr;
    check(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T)), "cudaMalloc");
    allocations_.push_back(p);
    check(cudaMemset(p, 0xff, n * sizeof(T)), "cudaMemset");
    return static_cast<T*>(p);
  }
  template <class T>
  T* upload(const std::vector<T>& host) {
    T* p = alloc<T>(host.size());
    check(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "copy to device");
    return p;
  }
  template <class T>
  std::vector<T> download(const T* p, std::size_t n) {
    std::vector<T> host(n);
    check(cudaMemcpy(host.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), "copy to host");
    return host;
  }
  template <class Kernel>
  void launch(const Kernel& k) {
    cuda::launch(k);
    check(cudaDeviceSynchronize(), "kernel");
  }

 private:
  static void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw Error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
  }
  std::vector<void*> allocations_;
};

}  // namespace specdec::kernels
