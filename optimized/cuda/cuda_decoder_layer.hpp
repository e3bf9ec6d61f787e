#pragma once
// One Llama decoder layer on the device, shared by the target (cuda_transformer) and the
// EAGLE-family heads (cuda_eagle_head): as reference/model/decoder_layer, the attention input may
// differ from the residual stream (EAGLE-1 omits the input norm; EAGLE-3's first layer reads
// concat(norm(emb), norm(h)) of width 2H while the residual stays h).
#include <cstdint>

#include "optimized/cuda/cuda_kv_cache.hpp"
#include "optimized/cuda/device_weights.hpp"
#include "reference/model/decoder_layer.hpp"
#include "reference/model/model_config.hpp"

namespace specdec::cuda {

// What every layer's attention reads of a forward's T new tokens, on the device: the mask
// (T, cols) as bytes, the tokens' and the slots' positions, RoPE tables (T, hd/2) from the host.
struct DeviceTokenBlock {
  int T = 0, first = 0, cols = 0;  // the new tokens are cache slots [first, first + T); cols = first + T
  const uint8_t* mask = nullptr;
  const int32_t* q_pos = nullptr;
  const int32_t* slot_pos = nullptr;
  const float* cos = nullptr;
  const float* sin = nullptr;
};

// The device buffers of a block and of one layer's intermediates, grown to the largest request.
struct LayerScratch {
  DeviceBuffer<uint8_t> mask;
  DeviceBuffer<int32_t> q_pos, slot_pos;
  DeviceBuffer<float> cos, sin;
  DeviceBuffer<float> xn, qkv, attn, tmp, act, scores;
};

// Copies `block` (its slots already appended to `cache`) to the device.
DeviceTokenBlock upload_token_block(DeviceRuntime& rt, const TokenBlock& block, const CudaKVCache& cache, int head_dim,
                                    LayerScratch& s);

// One layer over all T tokens of the block. attn_in: (T, in_width) row stride in_width, the
// attention input; the new keys and values go into `cache` layer `layer`. x: (T, H) the residual
// stream, updated in place: x += o_proj(attention), then x += down(swiglu(gate, up)(post_norm(x))).
void decoder_layer(DeviceRuntime& rt, const DeviceLayer& w, const ModelConfig& c, int layer, const float* attn_in,
                   int in_width, CudaKVCache& cache, const DeviceTokenBlock& b, float* x, LayerScratch& s);

}  // namespace specdec::cuda
