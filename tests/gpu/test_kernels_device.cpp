// Every kernel on the GPU, bitwise against its reference twin on fresh random inputs, outputs
// poisoned with NaN first: the same cases the cpu suite runs on the grid emulator. Skipped
// without a device.
#include <gtest/gtest.h>

#include <iostream>

#include "tests/gpu/cuda_device.hpp"
#include "tests/kernels/kernel_cases.hpp"

namespace specdec::kernels {
namespace {

class DeviceKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::device_available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
    std::cout << "device: " << cuda::device_description() << "\n";
  }
  CudaDevice dev;
};

TEST_F(DeviceKernels, Linear) { cases::check_linear_all(dev); }
TEST_F(DeviceKernels, GateUpSwiglu) { cases::check_gate_up_all(dev); }
TEST_F(DeviceKernels, RmsNorm) {
  cases::check_rms_norm(dev, 201, 3, 7, false);
  cases::check_rms_norm(dev, 202, 5, 64, true);
  cases::check_rms_norm(dev, 204, 64, 4096, true);
  cases::check_rms_norm(dev, 205, 4, 10, true);  // a q/k norm of head_dim 10: the tail read in place
}
TEST_F(DeviceKernels, RowArgmax) {
  for (const int n : {2, 7, 300}) cases::check_row_argmax(dev, 205 + n, n, 32);
  cases::check_row_argmax(dev, 206, 1000, 256);
  cases::check_row_argmax(dev, 208, 128256, 256);  // Llama-3's vocabulary
}
TEST_F(DeviceKernels, Rope) {
  cases::check_rope(dev, 211, 3, 4, 16);
  cases::check_rope(dev, 213, 64, 32, 128);
}
TEST_F(DeviceKernels, EmbeddingGather) {
  cases::check_embedding<WeightType::kF32>(dev, 221, 5, 50, 37);
  cases::check_embedding<WeightType::kBF16>(dev, 224, 64, 32000, 4096);
  cases::check_embedding<WeightType::kF16>(dev, 223, 3, 9, 130);
}
TEST_F(DeviceKernels, ResidualAdd) { cases::check_residual_add(dev, 232, 1 << 20); }
TEST_F(DeviceKernels, Attention) {
  cases::check_attention_all(dev);
  cases::check_attention(dev, 311, {64, 32, 8, 128, 4000, 0});
}
TEST_F(DeviceKernels, RaggedAttention) {
  cases::check_ragged_attention_all(dev);
  cases::check_ragged_attention(dev, 312, 32, 8, 128, 0, {{4000, 1}, {300, 8}, {0, 64}, {2000, 3}});
}
TEST_F(DeviceKernels, KvCompaction) { cases::check_kv_compaction(dev, 243, 600, 1024, 500, 40); }
TEST_F(DeviceKernels, LinearAtModelScale) {
  for (const int T : {1, 8, 64}) {
    cases::check_linear<WeightType::kBF16>(dev, 400u + T, {T, 4096, {4096, 1024, 1024}, false});
    cases::check_linear<WeightType::kF32>(dev, 500u + T, {T, 4096, {1000}, true});
  }
  cases::check_linear<WeightType::kBF16, 1>(dev, 401, {1, 14336, {4096}, false});
  cases::check_gate_up<WeightType::kBF16>(dev, 600, 8, 4096, 14336, false);
  cases::check_gate_up<WeightType::kBF16, 1>(dev, 601, 1, 4096, 14336, false);
}

}  // namespace
}  // namespace specdec::kernels
