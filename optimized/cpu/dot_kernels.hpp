#pragma once
// Blocks of dot products in the reference's reduction order (reference/model/ops.cpp, ops::dot):
// eight interleaved partial sums over the first 8·⌊n/8⌋ elements, a sequential tail, then the
// fixed combine (((a0+a4)+(a1+a5))+((a2+a6)+(a3+a7)))+tail; each product is accumulated by one
// fused multiply-add (rounded once), each combining sum rounded on its own. One AVX2 register
// holds exactly the eight partial sums (vfmadd on eight lanes; std::fma in the portable versions),
// so both give bitwise the same results, and neither depends on how many rows or tokens are
// processed together.
//
// A block is R ≤ kMaxBlockRows weight rows (stored F32, BF16 or F16, widened in registers) by
// TB ≤ kMaxBlockTokens activation rows (fp32): every weight element is loaded once per block
// however many tokens it serves.
#include <cstddef>

#include "reference/io/safetensors.hpp"

namespace specdec::cpu {

constexpr int kMaxBlockRows = 4;
constexpr int kMaxBlockTokens = 4;
constexpr int kMaxTileTokens = 32;

// out[r·TB + t] = Σ_i x[t·ldx + i] · w_r[i], i < n, in ops::dot's order. rows[r] points at the
// first element of weight row r (of type `dtype`: F32, BF16 or F16).
void dot_block(Dtype dtype, const void* const* rows, int R, const float* x, std::size_t ldx, int TB, int n,
               float* out);

// out[r·T + t] = Σ_i x[t·ldx + i] · w_r[i], i < n, in ops::dot's order, for R ≤ kMaxBlockRows
// weight rows at w + r·stride bytes and T ≤ kMaxTileTokens tokens: bitwise what dot_block gives.
// Every weight element is read from memory once for all T tokens: with T > 2 the tile runs as
// passes of two rows by up to four tokens, each pair of rows staying in cache for its passes.
// `next` (or nullptr): the first of R rows at the same stride to prefetch into L2 while this tile
// computes, so the memory stream does not stop while compute runs; callers name the rows two
// tiles ahead. Into L2, not L1: the requests reach memory well before the loads need the lines
// and the hardware moves them on to L1 (prefetching the next tile into L1 left an F32 decode at
// 75-80% of the read bandwidth and an 8-token forward a third slower).
void dot_tile(Dtype dtype, const void* w, std::size_t stride, int R, const float* x, std::size_t ldx, int T, int n,
              float* out, const void* next);

// dst[i] = src[i] widened to fp32 (exact), i < n; src holds elements of `dtype` (F32, BF16, F16).
void widen(Dtype dtype, const void* src, int n, float* dst);

// Attention's weighted sum of value rows for G heads that share them (a KV group), in the contract's
// order (reference/model/attention.hpp): out[h·ldo + d] = (Σ_j p[h·ldp + j] · rows[j][d]) · scale[h],
// the sum per element starting from 0 and adding the rounded products in j order, then one
// rounded multiply; h < G, j < n, d < m. Elements are independent, so vector lanes change no bit.
void weighted_sum(const float* p, std::size_t ldp, int G, const float* const* rows, int n, int m, const float* scale,
                  float* out, std::size_t ldo);

// ops::dot(a, b, n) bitwise, on the fastest available path.
float dot(const float* a, const float* b, int n);

}  // namespace specdec::cpu
