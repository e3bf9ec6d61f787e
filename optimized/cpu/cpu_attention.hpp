#pragma once
// Grouped-query attention over the cpu KV cache for the new tokens of one forward, in the
// reference's order (reference/model/decoder_layer.cpp): per (token, head) the visible keys in
// slot order, scores dot(q, k)·(1/√hd), a max-shifted exp, their sequential sum, the values
// accumulated in key order and scaled by 1/sum. The query heads sharing a KV head are scored in
// one pass over its keys; (token, KV head) pairs of every sequence of a batch are split over
// threads. Each row sees only its own sequence's cache and mask, so a row's result does not
// depend on the other rows or sequences computed with it.
#include <cstddef>
#include <vector>

#include "optimized/cpu/cpu_kv_cache.hpp"
#include "reference/model/decoder_layer.hpp"
#include "reference/model/model_config.hpp"

namespace specdec::cpu {

// One sequence's share of a batched attention. Its block's keys and values are already in its
// cache.
struct AttentionSequence {
  const float* q = nullptr;               // (T, ≥ nh·hd) at stride ldq, indexed by token of the block
  const CpuKVCache* cache = nullptr;
  const TokenBlock* block = nullptr;      // its T new tokens
  const std::vector<int>* rows = nullptr;  // the token indices (into the block) to compute
  float* out = nullptr;                   // (rows.size(), nh·hd) at stride ldo, row i for token rows[i]
};

// window: the layer's sliding window (0 = full attention).
void attention(const ModelConfig& c, int layer, int window, const std::vector<AttentionSequence>& seqs, std::size_t ldq,
               std::size_t ldo);

}  // namespace specdec::cpu
