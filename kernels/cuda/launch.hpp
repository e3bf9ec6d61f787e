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

// The most threads per block the kernels take as compiled for the current device (their registers
// can cap it below the device's 1024), the least over the linear kernels (Linear, GateUpSwiglu)
// and over the attention kernels.
struct KernelThreadLimits {
  int linear = 1024;
  int attention = 1024;
};
KernelThreadLimits kernel_thread_limits();

#define SPECDEC_DECLARE_CUDA_LAUNCH(...) void launch(const __VA_ARGS__& k, void* stream = nullptr);
SPECDEC_KERNEL_TYPES(SPECDEC_DECLARE_CUDA_LAUNCH)
#undef SPECDEC_DECLARE_CUDA_LAUNCH

}  // namespace specdec::kernels::cuda
