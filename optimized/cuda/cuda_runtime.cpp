// The device-runtime seam on a real GPU through the CUDA runtime (one stream, in-order launches),
// or, in a build without CUDA, the error that says how to get one.
#include <optional>
#include <string>

#include "optimized/cuda/device_runtime.hpp"
#include "reference/core/error.hpp"

#if SPECDEC_HAVE_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/launch.hpp"
#endif

namespace specdec::cuda {

#if SPECDEC_HAVE_CUDA

namespace {

std::string mib(std::size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

void check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) throw Error("CUDA: " + what + ": " + cudaGetErrorString(e));
}

class CudaRuntime final : public DeviceRuntime {
 public:
  explicit CudaRuntime(const std::optional<kernels::LaunchConfig>& config) {
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    const cudaError_t d = cudaDriverGetVersion(&driver);
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (d != cudaSuccess || driver == 0)
      throw Error("--backend cuda: no NVIDIA driver is installed (" +
                  std::string(d != cudaSuccess ? cudaGetErrorString(d) : "the CUDA driver library was not found") + ")");
    if (driver < runtime || e == cudaErrorInsufficientDriver)
      throw Error("--backend cuda: the NVIDIA driver supports CUDA " + version(driver) + ", older than this build's runtime " +
                  version(runtime) + "; update the driver");
    if (e != cudaSuccess || n == 0)
      throw Error("--backend cuda: no usable CUDA device (" + std::string(e != cudaSuccess ? cudaGetErrorString(e) : "none found") + ")");
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    int dev = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    cudaDeviceProp p{};
    check(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
    kernels::DeviceLimits& limits = limits_;
    limits.sm_count = p.multiProcessorCount;
    limits.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    limits.max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
    limits.max_threads_per_block = p.maxThreadsPerBlock;
    limits.shared_bytes_per_block = static_cast<long long>(p.sharedMemPerBlock);
    const kernels::cuda::KernelThreadLimits kernel = kernels::cuda::kernel_thread_limits();
    limits.max_linear_threads = kernel.linear;
    limits.max_attention_threads = kernel.attention;
    config_ = config ? *config : kernels::derive_launch_config(limits);
    name_ = kernels::cuda::device_description() + ", " + kernels::describe(config_);
  }
  ~CudaRuntime() override { cudaStreamDestroy(stream_); }

  std::string name() const override { return name_; }
  const kernels::LaunchConfig& launch_config() const override { return config_; }
  const kernels::DeviceLimits& limits() const override { return limits_; }
  void* allocate(std::size_t bytes) override {
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      std::size_t free = 0, total = 0;
      cudaMemGetInfo(&free, &total);
      throw Error("CUDA: out of device memory: asked for " + mib(bytes) + ", " + mib(free) + " of " + mib(total) + " free");
    }
    check(e, "cudaMalloc of " + mib(bytes));
    return p;
  }
  void release(void* p) noexcept override { cudaFree(p); }
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), "copy to the device");
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_), "copy to the host");
    synchronize();
  }
  void copy_on_device(void* dst, const void* src, std::size_t bytes) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_), "copy on the device");
  }
  void synchronize() override { check(cudaStreamSynchronize(stream_), "a kernel failed"); }

#define SPECDEC_CUDA_RUNTIME_LAUNCH(...) \
  void launch(const __VA_ARGS__& k) override { kernels::cuda::launch(k, stream_); }
  SPECDEC_KERNEL_TYPES(SPECDEC_CUDA_RUNTIME_LAUNCH)
#undef SPECDEC_CUDA_RUNTIME_LAUNCH

 private:
  static std::string version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }
  cudaStream_t stream_ = nullptr;
  kernels::LaunchConfig config_;
  kernels::DeviceLimits limits_;
  std::string name_;
};

}  // namespace

bool cuda_built() { return true; }
std::unique_ptr<DeviceRuntime> cuda_runtime() { return std::make_unique<CudaRuntime>(std::nullopt); }
std::unique_ptr<DeviceRuntime> cuda_runtime(const kernels::LaunchConfig& config) { return std::make_unique<CudaRuntime>(config); }

#else

bool cuda_built() { return false; }
std::unique_ptr<DeviceRuntime> cuda_runtime() {
  throw Error("this build has no CUDA backend; configure with -DSPECDEC_CUDA=ON (needs nvcc)");
}
std::unique_ptr<DeviceRuntime> cuda_runtime(const kernels::LaunchConfig&) { return cuda_runtime(); }

#endif

}  // namespace specdec::cuda
