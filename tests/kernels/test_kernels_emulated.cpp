// Every CUDA kernel body, run on the CPU grid emulator, bitwise against its reference twin.
#include <gtest/gtest.h>

#include "tests/kernels/emulated_device.hpp"
#include "tests/kernels/kernel_cases.hpp"

namespace specdec::kernels {
namespace {

TEST(EmulatedKernels, LinearEqualsOpsLinearForEveryWeightTypeAndShape) {
  EmulatedDevice dev;
  cases::check_linear_all(dev);
}

TEST(EmulatedKernels, GateUpSwigluEqualsTheReferenceMlpInput) {
  EmulatedDevice dev;
  cases::check_gate_up_all(dev);
}

TEST(EmulatedKernels, RmsNormEqualsOpsRmsNorm) {
  EmulatedDevice dev;
  cases::check_rms_norm(dev, 201, 3, 7, false);
  cases::check_rms_norm(dev, 202, 5, 64, true);
  cases::check_rms_norm(dev, 203, 2, 257, false);
  cases::check_rms_norm(dev, 204, 4, 10, true);  // a q/k norm of head_dim 10: the tail read in place
}

TEST(EmulatedKernels, RowArgmaxEqualsTheReferenceArgmax) {
  EmulatedDevice dev;
  for (const int n : {2, 7, 300}) cases::check_row_argmax(dev, 205 + n, n, 32);
  cases::check_row_argmax(dev, 206, 1000, 256);
  cases::check_row_argmax(dev, 207, 97, 1);
}

TEST(EmulatedKernels, RopeEqualsRopeApply) {
  EmulatedDevice dev;
  cases::check_rope(dev, 211, 3, 4, 16);
  cases::check_rope(dev, 212, 2, 2, 160);
}

TEST(EmulatedKernels, EmbeddingGatherWidensExactly) {
  EmulatedDevice dev;
  cases::check_embedding<WeightType::kF32>(dev, 221, 5, 50, 37);
  cases::check_embedding<WeightType::kBF16>(dev, 222, 4, 20, 200);
  cases::check_embedding<WeightType::kF16>(dev, 223, 3, 9, 130);
}

TEST(EmulatedKernels, ResidualAddEqualsEigen) {
  EmulatedDevice dev;
  cases::check_residual_add(dev, 231, 1000);
}

TEST(EmulatedKernels, AttentionEqualsAttendOverTreesPrefixesWindowsAndGqa) {
  EmulatedDevice dev;
  cases::check_attention_all(dev);
}

TEST(EmulatedKernels, RaggedAttentionAndKvAppendEqualAttendPerSequence) {
  EmulatedDevice dev;
  cases::check_ragged_attention_all(dev);
}

TEST(EmulatedKernels, KvCompactionEqualsDenseKVCacheGather) {
  EmulatedDevice dev;
  cases::check_kv_compaction(dev, 241, 20, 24, 5, 6);
  cases::check_kv_compaction(dev, 242, 9, 136, 0, 9);
}

TEST(EmulatedKernels, LinearRejectsTooManyTokens) {
  Linear<WeightType::kF32> k;
  k.T = kLinearMaxTokens + 1;
  k.in = 8;
  EXPECT_THROW(k.shape(), Error);
  k.T = 0;
  EXPECT_THROW(k.shape(), Error);
  Linear<WeightType::kF32, 1> one;
  one.T = kMaxTokenSlices + 1;
  EXPECT_THROW(one.shape(), Error);
  one.T = kMaxTokenSlices;
  EXPECT_NO_THROW(one.shape());
}

}  // namespace
}  // namespace specdec::kernels
