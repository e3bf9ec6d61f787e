#pragma once
// Grouped-query attention over the cpu KV cache for the new tokens of one forward, in the
// reference's order (reference/model/decoder_layer.cpp): per (token, head) the visible keys in
// slot order, scores dot(q, k)·(1/√hd), a max-shifted exp, their sequential sum, the values
// accumulated in key order and scaled by 1/sum. The query heads sharing a KV head are scored in
// one pass over its keys; (token, KV head) pairs are split over threads.
#include <cstddef>
#include <vector>

#include "optimized/cpu/cpu_kv_cache.hpp"
#include "reference/model/decoder_layer.hpp"
#include "reference/model/model_config.hpp"

namespace specdec::cpu {

// rows: the token indices (into block) to compute, output row i for token rows[i]. q: (T, ≥ nh·hd)
// at row stride ldq, indexed by token; the block's keys and values are already in the cache.
// window: the layer's sliding window (0 = full attention). out: (rows.size(), nh·hd) at stride ldo.
void attention(const ModelConfig& c, const float* q, std::size_t ldq, const CpuKVCache& cache, int layer,
               const TokenBlock& block, int window, const std::vector<int>& rows, float* out, std::size_t ldo);

}  // namespace specdec::cpu
