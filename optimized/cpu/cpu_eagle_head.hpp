#pragma once
// EAGLE-1, EAGLE-3 and P-EAGLE heads on the cpu kernels: the forward of the reference EagleHead
// (reference/drafters/eagle_head.hpp) computed with the cpu backend's batched linear layers,
// attention and KV cache, bitwise equal to the reference's. EagleHead::forward_batch reads each
// weight once for the rows of all its entries; attention stays per entry, on the entry's own cache.
//
// Every matrix of the head (fc, the layers' projections, EAGLE-3's lm_head, EAGLE-1's use of the
// target's LM head) is packed in the narrowest precision that holds all its values exactly (BF16,
// F16, else F32): a head trained or loaded in BF16, or the LM head of a BF16 target, is read at
// two bytes per weight, and no value changes, so no result does either.
#include "reference/drafters/eagle_head.hpp"

namespace specdec::cpu {

class CpuTransformer;

// `head` computing on the cpu backend (EagleHead::with_engine): same config, weights and target;
// its new_cache gives CpuKVCaches. `head` keeps its fp32 weights beside the packed copy, which
// lives as long as the returned head or a copy of it; the target must outlive them, as for `head`.
EagleHead cpu_eagle_head(const EagleHead& head);
// The same for a head loaded for this run alone, holding one copy of its weights: the fp32
// matrices move into the engine (EagleHead::release_weights), which frees each once packed, and
// the head computes on the cpu backend alone. With `target`, the CpuTransformer computing the
// head's target, the engine reads the target's token embeddings and (EAGLE-1, an MTP module
// without its own LM head) LM head from it, packed as the target stores them: the head's target
// then needs no fp32 tensors (TargetTensors of the config alone). `target` must outlive the head,
// and hold the values of the head's target (the checkpoint in its stored precision).
EagleHead cpu_eagle_head(EagleHead&& head, const CpuTransformer* target);

}  // namespace specdec::cpu
