#pragma once
// Medusa heads on the cpu kernels: the forward of the reference MedusaHeads
// (reference/drafters/medusa_heads.hpp) with the cpu backend's batched linear layers, bitwise
// equal to the reference's. Every block weight and projection is packed in the narrowest precision
// that holds all its values exactly (BF16, F16, else F32), so heads trained in BF16 are read at two
// bytes per weight and no result changes. SiLU takes its e^(−z) from exp_shifted, lane for lane
// the reference's exact::exp.
#include "reference/drafters/medusa_heads.hpp"

namespace specdec::cpu {

// `heads` computing on the cpu backend (MedusaHeads::with_engine): same config and weights.
// `heads` keep their fp32 weights beside the packed copy, which lives as long as the returned
// heads or a copy of them.
MedusaHeads cpu_medusa_heads(const MedusaHeads& heads);
// The same for heads loaded for this run alone: the fp32 weights move into the engine
// (MedusaHeads::release_weights), which frees each matrix once packed, and the heads compute on
// the cpu backend alone.
MedusaHeads cpu_medusa_heads(MedusaHeads&& heads);

}  // namespace specdec::cpu
