#pragma once
// Host-side entry points of the kernels on a real GPU: one `launch` per kernel type, on a CUDA
// stream (nullptr: the default stream), with the launch shape the kernel derives from its
// arguments, for every type in kernels/kernel_types.hpp. Callable from code the host compiler
// builds; defined in launch.cu (nvcc). Linear and GateUpSwiglu come in two forms: <W> takes up to
// 64 tokens, <W, 1> up to 8 with far fewer registers (the one-token decode form).
#include <string>

#include "kernels/kernel_types.hpp"

namespace specdec::kernels::cuda {

// True when a CUDA device is present and usable; `why` says what was found otherwise.
bool device_available(std::string* why = nullptr);
// "NVIDIA H200 (sm_90, 132 SMs)".
std::string device_description();

#define SPECDEC_DECLARE_CUDA_LAUNCH(...) void launch(const __VA_ARGS__& k, void* stream = nullptr);
SPECDEC_KERNEL_TYPES(SPECDEC_DECLARE_CUDA_LAUNCH)
#undef SPECDEC_DECLARE_CUDA_LAUNCH

}  // namespace specdec::kernels::cuda
