#pragma once
// The kernels of each instruction-set path behind dot_kernels.hpp, and what the paths share:
// ops::dot's fixed combine, scalar widening, the next-rows prefetch window. Each path's file
// builds one table; dot_kernels.cpp picks the table of cpu::active_isa().
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "optimized/cpu/dot_kernels.hpp"
#include "reference/core/half.hpp"
#include "reference/io/safetensors.hpp"

namespace specdec::cpu::paths {

// dot_block: out[r·TB + t] for R rows anywhere in memory, TB tokens.
using BlockKernel = void (*)(const void* const* rows, const float* x, std::size_t ldx, int n, float* out);
// dot_tile for R rows at w + r·stride: (w, stride, x, ldx, T, n, out, next).
using TileKernel = void (*)(const std::byte*, std::size_t, const float*, std::size_t, int, int, float*,
                            const std::byte*);
using WidenKernel = void (*)(const void* src, int n, float* dst);
using WeightedSumKernel = void (*)(const float* p, std::size_t ldp, int G, const float* const* rows, int n, int m,
                                   const float* scale, float* out, std::size_t ldo);

constexpr int kDtypes = 3;  // F32, BF16, F16
constexpr int dtype_index(Dtype d) { return d == Dtype::F32 ? 0 : d == Dtype::BF16 ? 1 : 2; }
constexpr Dtype kDtypeAt[kDtypes] = {Dtype::F32, Dtype::BF16, Dtype::F16};

struct KernelTable {
  std::array<std::array<std::array<BlockKernel, kMaxBlockTokens>, kMaxBlockRows>, kDtypes> block;  // [d][R-1][TB-1]
  std::array<std::array<TileKernel, kMaxBlockRows>, kDtypes> tile;                                  // [d][R-1]
  std::array<WidenKernel, kDtypes> widen;                                                           // [d]
  WeightedSumKernel weighted_sum;
};

const KernelTable& portable_kernels();
const KernelTable& avx2_kernels();    // only where SPECDEC_CPU_X86 (callers check isa_supported)
const KernelTable& avx512_kernels();  // likewise

// The fixed combine of ops::dot.
inline float combine(const float* a, float tail) {
  return (((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]))) + tail;
}

template <Dtype D>
inline float widen_one(const void* row, int i) {
  if constexpr (D == Dtype::F32) {
    return static_cast<const float*>(row)[i];
  } else if constexpr (D == Dtype::BF16) {
    return bfloat16_to_float(static_cast<const uint16_t*>(row)[i]);
  } else {
    return half_to_float(static_cast<const uint16_t*>(row)[i]);
  }
}

// ops::dot's sequential tail over elements [n8, n) of token x and row `row`.
template <Dtype D>
inline float tail_dot(const float* x, const void* row, int n8, int n) {
  float tail = 0.0f;
  for (int j = n8; j < n; ++j) tail = std::fma(x[j], widen_one<D>(row, j), tail);
  return tail;
}

// Bytes of one stored element, and kernel chunks (8 elements) per 64-byte cache line.
template <Dtype D>
constexpr int kElementBytes = D == Dtype::F32 ? 4 : 2;
template <Dtype D>
constexpr int kChunksPerLine = 64 / (8 * kElementBytes<D>);

// The rows of the next tile that a pass prefetches: rows [first, last) of those at `rows`.
struct NextRows {
  const std::byte* rows;  // nullptr: none
  std::size_t stride;
  int first, last;
};

// Tables from a path's kernel templates: P::block<D, R, TB>, P::tile<D, R>, P::widen<D>.
template <class P, int DI, int R, int... TBs>
constexpr std::array<BlockKernel, kMaxBlockTokens> block_row(std::integer_sequence<int, TBs...>) {
  return {&P::template block<kDtypeAt[DI], R, TBs + 1>...};
}
template <class P, int DI, int... Rs>
constexpr std::array<std::array<BlockKernel, kMaxBlockTokens>, kMaxBlockRows> block_rows(std::integer_sequence<int, Rs...>) {
  return {block_row<P, DI, Rs + 1>(std::make_integer_sequence<int, kMaxBlockTokens>())...};
}
template <class P>
constexpr decltype(KernelTable::block) make_block_table() {
  constexpr auto rs = std::make_integer_sequence<int, kMaxBlockRows>();
  return {block_rows<P, 0>(rs), block_rows<P, 1>(rs), block_rows<P, 2>(rs)};
}
template <class P, int DI, int... Rs>
constexpr std::array<TileKernel, kMaxBlockRows> tile_row(std::integer_sequence<int, Rs...>) {
  return {&P::template tile<kDtypeAt[DI], Rs + 1>...};
}
template <class P>
constexpr decltype(KernelTable::tile) make_tile_table() {
  constexpr auto rs = std::make_integer_sequence<int, kMaxBlockRows>();
  return {tile_row<P, 0>(rs), tile_row<P, 1>(rs), tile_row<P, 2>(rs)};
}
template <class P>
constexpr decltype(KernelTable::widen) make_widen_table() {
  return {&P::template widen<Dtype::F32>, &P::template widen<Dtype::BF16>, &P::template widen<Dtype::F16>};
}

}  // namespace specdec::cpu::paths
