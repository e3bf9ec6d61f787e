// The device-runtime seam on the CPU grid emulator: device memory is emulated device memory
// (NaN-filled, one heap block per allocation), launches run the kernel bodies on fibers.
#include <cstring>

#include "kernels/emulator/grid_emulator.hpp"
#include "optimized/cuda/device_runtime.hpp"

namespace specdec::cuda {

namespace {

class EmulatorRuntime final : public DeviceRuntime {
 public:
  EmulatorRuntime(bool check_schedules, const kernels::LaunchConfig& config)
      : check_(check_schedules), config_(config), limits_(emulated_device_limits()) {}

  std::string name() const override {
    return check_ ? "CPU grid emulator (three schedules per launch)" : "CPU grid emulator";
  }
  const kernels::LaunchConfig& launch_config() const override { return config_; }
  const kernels::DeviceLimits& limits() const override { return limits_; }
  void* allocate(std::size_t bytes) override { return memory_.allocate(bytes); }
  void release(void* p) noexcept override {
    try {
      memory_.release(p);
    } catch (...) {  // not ours: nothing to free
    }
  }
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_on_device(void* dst, const void* src, std::size_t bytes) override { std::memmove(dst, src, bytes); }
  void synchronize() override {}

#define SPECDEC_EMULATED_LAUNCH(...) \
  void launch(const __VA_ARGS__& k) override { run(k); }
  SPECDEC_KERNEL_TYPES(SPECDEC_EMULATED_LAUNCH)
#undef SPECDEC_EMULATED_LAUNCH

 private:
  template <class Kernel>
  void run(const Kernel& k) {
    const kernels::LaunchShape s = k.shape();
    if (s.grid.x == 0 || s.grid.y == 0 || s.grid.z == 0) return;
    if (check_) {
      kernels::emu::launch(memory_, k, ++seed_);
    } else {
      kernels::emu::run(s, kernels::emu::Schedule::kForward, 0, [&k](kernels::emu::Context& c) { k(c); });
    }
  }

  bool check_;
  kernels::LaunchConfig config_;
  kernels::DeviceLimits limits_;
  uint64_t seed_ = 0;
  kernels::emu::DeviceMemory memory_;
};

}  // namespace

kernels::DeviceLimits emulated_device_limits() {
  kernels::DeviceLimits d;
  d.sm_count = 4;
  d.max_threads_per_sm = 1536;
  d.max_blocks_per_sm = 16;
  return d;
}

std::unique_ptr<DeviceRuntime> emulator_runtime(bool check_schedules) {
  return emulator_runtime(check_schedules, kernels::derive_launch_config(emulated_device_limits()));
}

std::unique_ptr<DeviceRuntime> emulator_runtime(bool check_schedules, const kernels::LaunchConfig& config) {
  return std::make_unique<EmulatorRuntime>(check_schedules, config);
}

}  // namespace specdec::cuda
