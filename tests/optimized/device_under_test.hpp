#pragma once
// The device the CUDA backend's tests run on. In the cpu tests (tests/optimized) the CPU grid
// emulator; compiled with SPECDEC_TEST_ON_GPU=1 (tests/gpu) the same tests run on the GPU through
// the CUDA runtime, and each skips, saying why, when this build or machine has none (DeviceTest).
#include <gtest/gtest.h>

#include <memory>

#include "optimized/cuda/device_runtime.hpp"
#include "reference/core/error.hpp"

#ifndef SPECDEC_TEST_ON_GPU
#define SPECDEC_TEST_ON_GPU 0
#endif

namespace specdec::testing {

inline constexpr bool kOnGpu = SPECDEC_TEST_ON_GPU != 0;

// A fresh runtime on the device under test, with the device's own launch configuration or `config`.
inline std::shared_ptr<cuda::DeviceRuntime> test_device() {
  if constexpr (kOnGpu) return cuda::cuda_runtime();
  return cuda::emulator_runtime();
}
inline std::shared_ptr<cuda::DeviceRuntime> test_device(const kernels::LaunchConfig& config) {
  if constexpr (kOnGpu) return cuda::cuda_runtime(config);
  return cuda::emulator_runtime(false, config);
}
// On the emulator, a runtime that runs every launch under three thread schedules and fails when
// memory differs; on a GPU, the device itself (its scheduler is the real one).
inline std::shared_ptr<cuda::DeviceRuntime> schedule_checking_device() {
  if constexpr (kOnGpu) return cuda::cuda_runtime();
  return cuda::emulator_runtime(true);
}

// The fixture of every CUDA backend test (each suite derives its own from it): built for a GPU,
// it skips the test, saying why, when this build or machine has no usable one. (A skip from a
// global environment would be counted as a pass.)
class DeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (kOnGpu) {
      try {
        cuda::cuda_runtime();
      } catch (const Error& e) {
        GTEST_SKIP() << e.what();
      }
    }
  }
};

}  // namespace specdec::testing
