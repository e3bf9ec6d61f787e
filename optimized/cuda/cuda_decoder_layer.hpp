#pragma once
// One Llama decoder layer on the device, shared by the target (cuda_transformer) and the
// EAGLE-family heads (cuda_eagle_head): as reference/model/decoder_layer, the attention input may
// differ from the residual stream (EAGLE-1 omits the input norm; EAGLE-3's first layer reads
// concat(norm(emb), norm(h)) of width 2H while the residual stays h).
//
// A forward runs a batch of sequences (one sequence is a batch of one): the rows of every
// sequence are stacked, so each linear reads its weights once for all of them, while the new keys
// and values go into each sequence's own cache and each row attends over its own sequence's cache
// under its own mask. Every row keeps the reduction order it has alone.
#include <cstdint>
#include <vector>

#include "kernels/attention.cuh"
#include "optimized/cuda/cuda_kv_cache.hpp"
#include "optimized/cuda/device_weights.hpp"
#include "reference/model/decoder_layer.hpp"
#include "reference/model/model_config.hpp"

namespace specdec::cuda {

// What every layer's attention reads of a batch's new rows, on the device. Sequence e's T_e rows
// are rows [row0_e, row0_e + T_e) of the (rows, ·) activations, rows = Σ T_e.
struct DeviceTokenBlock {
  int rows = 0, entries = 0;
  const int32_t* row_entry = nullptr;  // (rows) each row's sequence
  const int32_t* q_pos = nullptr;      // (rows) positions
  const float* cos = nullptr;          // (rows, hd/2) RoPE tables from the host
  const float* sin = nullptr;
  // (layers, entries): per layer and sequence its cache's keys and values, its mask (T_e, cols_e),
  // its slots' positions and its attention scratch.
  const kernels::KvEntry* kv = nullptr;
  const kernels::KvEntry* layer(int l) const { return kv + static_cast<std::size_t>(l) * entries; }
};

// The device buffers of a block and of one layer's intermediates, grown to the largest batch.
struct LayerScratch {
  DeviceBuffer<uint8_t> mask;
  DeviceBuffer<int32_t> row_entry, q_pos, slot_pos;
  DeviceBuffer<float> cos, sin;
  DeviceBuffer<kernels::KvEntry> kv;
  DeviceBuffer<float> xn, qkv, attn, tmp, act, scores;
};

// Copies the blocks of a batch (blocks[e]'s slots already appended to caches[e], all caches of
// one shape) to the device.
DeviceTokenBlock upload_token_blocks(DeviceRuntime& rt, const std::vector<TokenBlock>& blocks,
                                     const std::vector<CudaKVCache*>& caches, int heads, int head_dim, LayerScratch& s);

// One layer over all rows of the block. attn_in: (rows, in_width) row stride in_width, the
// attention input; the new keys and values go into each sequence's cache, layer `layer`.
// x: (rows, H) the residual stream, updated in place: x += o_proj(attention), then
// x += down(swiglu(gate, up)(post_norm(x))).
void decoder_layer(DeviceRuntime& rt, const DeviceLayer& w, const ModelConfig& c, int layer, const float* attn_in,
                   int in_width, const DeviceTokenBlock& b, float* x, LayerScratch& s);

}  // namespace specdec::cuda
