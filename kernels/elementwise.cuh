#pragma once
// The elementwise pieces of a forward: the embedding gather (a stored-precision table widened
// exactly) and the residual add. Each output element is one operation, so any launch gives the
// reference's bits.
#include <cstdint>

#include "kernels/exec/launch_shape.hpp"
#include "kernels/exec/weights.cuh"

namespace specdec::kernels {

// y[t] = table[ids[t]] widened to fp32; table (vocab, width) stored as W. The host checks ids; an
// id outside [0, vocab) gives a NaN row here instead of a read out of bounds.
template <WeightType W>
struct EmbeddingGather {
  const void* table = nullptr;
  const int32_t* ids = nullptr;  // (T)
  float* y = nullptr;            // (T, ldy)
  long long ldy = 0;
  int T = 0, vocab = 0, width = 0;

  LaunchShape shape() const { return {{T, 1, 1}, 128, 0}; }

  template <class Ctx>
  SPECDEC_HD void operator()(const Ctx& ctx) const {
    const int t = ctx.block_x();
    const int id = ids[t];
    float* yt = y + t * ldy;
    const bool ok = id >= 0 && id < vocab;
    const void* row = static_cast<const unsigned char*>(table) + (ok ? static_cast<long long>(id) : 0) * width * kWeightBytes<W>;
    for (int i = ctx.thread(); i < width; i += ctx.block_dim())
      yt[i] = ok ? load_weight<W>(row, i) : exact::from_bits(0x7fc00000u);
  }
};

// y[i] = a[i] + b[i], i < n (y may be a or b).
struct ResidualAdd {
  const float* a = nullptr;
  const float* b = nullptr;
  float* y = nullptr;
  long long n = 0;

  static constexpr int kThreads = 256;
  LaunchShape shape() const { return {{static_cast<int>((n + kThreads - 1) / kThreads), 1, 1}, kThreads, 0}; }

  template <class Ctx>
  SPECDEC_HD void operator()(const Ctx& ctx) const {
    const long long i = static_cast<long long>(ctx.block_x()) * kThreads + ctx.thread();
    if (i < n) y[i] = exact::add(a[i], b[i]);
  }
};

// dst[i] = src[rows[i]] (rows of `width` floats), i < n; rows null: src[i]. The KV cache's
// compaction is two of these through a scratch buffer (any order of slots is then safe, as in
// DenseKVCache::gather).
struct GatherRows {
  const float* src = nullptr;
  long long lds = 0;
  const int32_t* rows = nullptr;
  float* dst = nullptr;
  long long ldd = 0;
  int n = 0, width = 0;

  LaunchShape shape() const { return {{n, 1, 1}, 128, 0}; }

  template <class Ctx>
  SPECDEC_HD void operator()(const Ctx& ctx) const {
    const int i = ctx.block_x();
    const float* s = src + (rows ? rows[i] : i) * lds;
    float* d = dst + i * ldd;
    for (int c = ctx.thread(); c < width; c += ctx.block_dim()) d[c] = s[c];
  }
};

}  // namespace specdec::kernels
