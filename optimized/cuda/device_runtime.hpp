#pragma once
// The thin seam between the CUDA backend's host code and a device: allocate, copy, fill, launch,
// synchronize. Two implementations: the CUDA runtime on a real GPU, and the CPU grid emulator
// (kernels/emulator), on which the whole backend — host code and kernels — runs in the cpu tests.
// Launches are in order (one stream); copies to the host synchronize.
#include <cstddef>
#include <memory>
#include <string>

#include "kernels/exec/launch_config.hpp"
#include "kernels/kernel_types.hpp"

namespace specdec::cuda {

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  // What runs the kernels, e.g. "NVIDIA H200 (sm_90, 132 SMs)" or "CPU grid emulator".
  virtual std::string name() const = 0;
  // Threads per block the host code launches with, derived from the device (never a result bit).
  virtual const kernels::LaunchConfig& launch_config() const = 0;
  // What the device offers, including the most threads per block its compiled kernels take.
  virtual const kernels::DeviceLimits& limits() const = 0;

  // Device memory. allocate throws specdec::Error naming the bytes asked for and those free.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* p) noexcept = 0;
  virtual void copy_to_device(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_on_device(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void synchronize() = 0;

#define SPECDEC_DECLARE_RUNTIME_LAUNCH(...) virtual void launch(const __VA_ARGS__& k) = 0;
  SPECDEC_KERNEL_TYPES(SPECDEC_DECLARE_RUNTIME_LAUNCH)
#undef SPECDEC_DECLARE_RUNTIME_LAUNCH
};

// The emulator: every launch runs on the CPU. With `check_schedules`, each launch runs under three
// thread schedules and must leave memory identical (slow: for small tests). It launches with
// `config` (by default what derive_launch_config gives its emulated device, below).
std::unique_ptr<DeviceRuntime> emulator_runtime(bool check_schedules = false);
std::unique_ptr<DeviceRuntime> emulator_runtime(bool check_schedules, const kernels::LaunchConfig& config);
// The limits the emulator reports: a small GPU of 4 SMs of 1536 threads in at most 16 blocks.
kernels::DeviceLimits emulated_device_limits();

// Whether this build has the CUDA runtime (configured with CUDA).
bool cuda_built();
// The CUDA runtime on the current device, launching with the configuration derived from its limits
// or with `config`. Throws specdec::Error when this build has no CUDA, when there is no usable
// device, or when the driver is older than the runtime.
std::unique_ptr<DeviceRuntime> cuda_runtime();
std::unique_ptr<DeviceRuntime> cuda_runtime(const kernels::LaunchConfig& config);

// A typed device allocation, released with its owner.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceRuntime& rt, std::size_t count)
      : rt_(&rt), count_(count), p_(count ? static_cast<T*>(rt.allocate(count * sizeof(T))) : nullptr) {}
  DeviceBuffer(DeviceRuntime& rt, const T* host, std::size_t count) : DeviceBuffer(rt, count) {
    if (count) rt.copy_to_device(p_, host, count * sizeof(T));
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : rt_(o.rt_), count_(o.count_), p_(o.p_) { o.p_ = nullptr, o.count_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      rt_ = o.rt_, count_ = o.count_, p_ = o.p_;
      o.p_ = nullptr, o.count_ = 0;
    }
    return *this;
  }
  ~DeviceBuffer() { reset(); }

  T* get() const { return p_; }
  std::size_t size() const { return count_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  void reset() {
    if (p_) rt_->release(p_);
    p_ = nullptr;
  }
  DeviceRuntime* rt_ = nullptr;
  std::size_t count_ = 0;
  T* p_ = nullptr;
};

}  // namespace specdec::cuda
