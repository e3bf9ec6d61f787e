#pragma once
// Every kernel type a launcher can run, as one X-macro list: the CUDA launchers
// (kernels/cuda/launch.hpp) and the CUDA backend's device-runtime seam declare one launch per
// entry from it, so adding a kernel here is all it takes to reach both. X is called with the type
// as its (variadic) argument.
#include "kernels/argmax.cuh"
#include "kernels/attention.cuh"
#include "kernels/elementwise.cuh"
#include "kernels/linear.cuh"
#include "kernels/rms_norm.cuh"
#include "kernels/rope.cuh"

#define SPECDEC_KERNEL_TYPES(X)                                                                    \
  X(::specdec::kernels::Linear<::specdec::kernels::WeightType::kF32>)                              \
  X(::specdec::kernels::Linear<::specdec::kernels::WeightType::kF32, 1>)                           \
  X(::specdec::kernels::Linear<::specdec::kernels::WeightType::kBF16>)                             \
  X(::specdec::kernels::Linear<::specdec::kernels::WeightType::kBF16, 1>)                          \
  X(::specdec::kernels::Linear<::specdec::kernels::WeightType::kF16>)                              \
  X(::specdec::kernels::Linear<::specdec::kernels::WeightType::kF16, 1>)                           \
  X(::specdec::kernels::GateUpSwiglu<::specdec::kernels::WeightType::kF32>)                        \
  X(::specdec::kernels::GateUpSwiglu<::specdec::kernels::WeightType::kF32, 1>)                     \
  X(::specdec::kernels::GateUpSwiglu<::specdec::kernels::WeightType::kBF16>)                       \
  X(::specdec::kernels::GateUpSwiglu<::specdec::kernels::WeightType::kBF16, 1>)                    \
  X(::specdec::kernels::GateUpSwiglu<::specdec::kernels::WeightType::kF16>)                        \
  X(::specdec::kernels::GateUpSwiglu<::specdec::kernels::WeightType::kF16, 1>)                     \
  X(::specdec::kernels::RmsNorm)                                                                   \
  X(::specdec::kernels::RopeApply)                                                                 \
  X(::specdec::kernels::EmbeddingGather<::specdec::kernels::WeightType::kF32>)                     \
  X(::specdec::kernels::EmbeddingGather<::specdec::kernels::WeightType::kBF16>)                    \
  X(::specdec::kernels::EmbeddingGather<::specdec::kernels::WeightType::kF16>)                     \
  X(::specdec::kernels::ResidualAdd)                                                               \
  X(::specdec::kernels::Attention)                                                                 \
  X(::specdec::kernels::RaggedAttention)                                                           \
  X(::specdec::kernels::KvAppend)                                                                  \
  X(::specdec::kernels::GatherRows)                                                                \
  X(::specdec::kernels::RowArgmax)
