#pragma once
// EAGLE-1, EAGLE-3 and P-EAGLE heads on the device: the forward of the reference EagleHead
// (reference/drafters/eagle_head.hpp) as the kernels of kernels/ behind the DeviceRuntime seam,
// with the drafter's KV cache on the device, bitwise equal to the reference's.
//
// Every matrix (fc, each layer's projections, EAGLE-3's lm_head, EAGLE-1's copy of the target's
// LM head) is uploaded in the narrowest precision that holds all its values exactly (BF16, F16,
// else F32), so a head stored in BF16 is read at two bytes per weight and no result changes. The
// embedding rows of the T new tokens come from the head's fp32 table on the host (T rows per call).
// forward_batch runs the rows of every sequence in one pass, as CudaTransformer::forward_batch
// (each weight read once, each row attending over its own sequence's cache); forward is a batch
// of one.
#include <memory>

#include "optimized/cuda/device_runtime.hpp"
#include "reference/drafters/eagle_head.hpp"

namespace specdec::cuda {

// `head` computing on `runtime`'s device (EagleHead::with_engine): same config, weights and
// target; its new_cache gives CudaKVCaches on that device. The target must outlive the result.
EagleHead cuda_eagle_head(std::shared_ptr<DeviceRuntime> runtime, const EagleHead& head);

}  // namespace specdec::cuda
