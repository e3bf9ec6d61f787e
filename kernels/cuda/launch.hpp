#pragma once
// Host-side entry points of the kernels on a real GPU: one `launch` per kernel type, on a CUDA
// stream (nullptr: the default stream), with the launch shape the kernel derives from its
// arguments. Callable from code the host compiler builds; defined in launch.cu (nvcc). Linear and
// GateUpSwiglu come in two forms: <W> takes up to 64 tokens, <W, 1> up to 8 with far fewer
// registers (the one-token decode form).
#include <string>

#include "kernels/attention.cuh"
#include "kernels/elementwise.cuh"
#include "kernels/linear.cuh"
#include "kernels/rms_norm.cuh"
#include "kernels/rope.cuh"

namespace specdec::kernels::cuda {

// True when a CUDA device is present and usable; `why` says what was found otherwise.
bool device_available(std::string* why = nullptr);
// "NVIDIA H200 (sm_90, 132 SMs)".
std::string device_description();

void launch(const Linear<WeightType::kF32>& k, void* stream = nullptr);
void launch(const Linear<WeightType::kF32, 1>& k, void* stream = nullptr);
void launch(const Linear<WeightType::kBF16>& k, void* stream = nullptr);
void launch(const Linear<WeightType::kBF16, 1>& k, void* stream = nullptr);
void launch(const Linear<WeightType::kF16>& k, void* stream = nullptr);
void launch(const Linear<WeightType::kF16, 1>& k, void* stream = nullptr);
void launch(const GateUpSwiglu<WeightType::kF32>& k, void* stream = nullptr);
void launch(const GateUpSwiglu<WeightType::kF32, 1>& k, void* stream = nullptr);
void launch(const GateUpSwiglu<WeightType::kBF16>& k, void* stream = nullptr);
void launch(const GateUpSwiglu<WeightType::kBF16, 1>& k, void* stream = nullptr);
void launch(const GateUpSwiglu<WeightType::kF16>& k, void* stream = nullptr);
void launch(const GateUpSwiglu<WeightType::kF16, 1>& k, void* stream = nullptr);
void launch(const RmsNorm& k, void* stream = nullptr);
void launch(const RopeApply& k, void* stream = nullptr);
void launch(const EmbeddingGather<WeightType::kF32>& k, void* stream = nullptr);
void launch(const EmbeddingGather<WeightType::kBF16>& k, void* stream = nullptr);
void launch(const EmbeddingGather<WeightType::kF16>& k, void* stream = nullptr);
void launch(const ResidualAdd& k, void* stream = nullptr);
void launch(const Attention& k, void* stream = nullptr);
void launch(const GatherRows& k, void* stream = nullptr);

}  // namespace specdec::kernels::cuda
