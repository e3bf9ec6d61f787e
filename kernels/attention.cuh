#pragma once
// Tree-masked, grouped-query attention over a KV cache of any length, bitwise the reference's
// `attend` (reference/model/attention.hpp) for every query row and head:
//   s_j = dot(q, k_j)·scale for the visible slots j (mask, sliding window), m = max s_j,
//   e_j = exp(s_j − m), sum = Σ e_j and o = (Σ e_j·v_j)·(1/sum), both sums in slot order.
// One block per (query row, head). Scores: the block's threads take slots in turn, each dot
// product on one thread in the contract's order; the max is order-free (NaN never wins, and which
// zero wins does not change any e_j). The sums run in slot order on the threads that own an output
// element, reading the e_j the block left in `scratch`.
//
// Two launches share that one body (attend_row): Attention, the rows of one sequence over one
// cache; RaggedAttention, the rows of several sequences of a batch, each over its own cache with
// its own mask (KvEntry), so a batched forward gives each row the bits of its sequence alone.
// KvAppend writes a batch's new keys and values into each sequence's cache.
#include <cstdint>
#include <string>

#include "kernels/exec/lane_dot.cuh"
#include "kernels/exec/launch_shape.hpp"
#include "reference/core/error.hpp"

namespace specdec::kernels {

// What one block of attention reads and writes: one query row and head against `cols` slots.
struct AttentionRow {
  const float* q = nullptr;  // (hd) the head's query
  const float* k = nullptr;  // slot j's keys of the head's KV group at k + j·ldkv
  const float* v = nullptr;  // likewise values
  long long ldkv = 0;
  const uint8_t* mask = nullptr;      // (cols) this row's
  const int32_t* slot_pos = nullptr;  // (cols) read only with a window
  int q_pos = 0;                      // read only with a window
  int window = 0;
  float* s = nullptr;    // (cols) scratch: scores, then e_j
  float* out = nullptr;  // (hd)
  int cols = 0, hd = 0;
  float scale = 0.0f;

  SPECDEC_HD bool visible(int j) const {
    if (!mask[j]) return false;
    return !(window > 0 && q_pos - slot_pos[j] >= window);
  }
};

// The body every attention launch runs; every thread of the block calls it together (barriers).
template <class Ctx>
SPECDEC_HD inline void attend_row(const Ctx& ctx, const AttentionRow& a) {
  float m = exact::from_bits(0xff800000u);  // -inf
  for (int j = ctx.thread(); j < a.cols; j += ctx.block_dim()) {
    if (!a.visible(j)) continue;
    const float sj = exact::mul(dot_sequential(a.q, a.k + j * a.ldkv, a.hd), a.scale);
    a.s[j] = sj;
    if (sj > m) m = sj;
  }
  for (int off = kWarpSize / 2; off > 0; off /= 2) {
    const float o = ctx.shfl_xor(m, off);
    if (o > m) m = o;
  }
  float* warp_max = ctx.template shared<float>();
  if (ctx.lane() == 0) warp_max[ctx.thread() / kWarpSize] = m;
  ctx.sync();
  for (int w = 0; w < ctx.block_dim() / kWarpSize; ++w)
    if (warp_max[w] > m) m = warp_max[w];
  for (int j = ctx.thread(); j < a.cols; j += ctx.block_dim())
    if (a.visible(j)) a.s[j] = exact::exp(exact::sub(a.s[j], m));
  ctx.sync();

  for (int d = ctx.thread(); d < a.hd; d += ctx.block_dim()) {
    float sum = 0.0f, o = 0.0f;
    int n = 0;
    for (int j = 0; j < a.cols; ++j) {
      if (!a.visible(j)) continue;
      sum = exact::add(sum, a.s[j]);
      o = exact::add(o, exact::mul(a.s[j], a.v[j * a.ldkv + d]));
      ++n;
    }
    const float inv = n == 0 ? 0.0f : exact::div(1.0f, sum);
    a.out[d] = exact::mul(o, inv);
  }
}

// Host side: attention's threads per block, a multiple of 32 up to 1024 (never a result bit: the
// max is order-free and every sum runs in slot order on one thread).
inline void check_attention_threads(const char* kernel, int threads) {
  if (threads < kWarpSize || threads > 1024 || threads % kWarpSize != 0)
    throw Error(std::string(kernel) + " kernel: " + std::to_string(threads) +
                " threads per block; expected a multiple of 32 up to 1024");
}

struct Attention {
  const float* q = nullptr;  // (T, ldq): heads of hd contiguous
  long long ldq = 0;
  const float* k = nullptr;  // (slots, ldkv): KV heads of hd contiguous
  const float* v = nullptr;  // (slots, ldkv)
  long long ldkv = 0;
  const uint8_t* mask = nullptr;     // (T, cols): nonzero where row t may see slot j
  const int32_t* q_pos = nullptr;    // (T) positions of the query rows
  const int32_t* slot_pos = nullptr; // (cols) positions of the slots (read only with a window)
  int window = 0;                    // sliding window, 0 = none: slot j is hidden when q_pos − pos_j >= window
  float* out = nullptr;              // (T, ldo)
  long long ldo = 0;
  float* scratch = nullptr;          // (T·heads, cols): scores, then e_j
  int T = 0, heads = 0, kv_heads = 0, hd = 0, cols = 0;
  float scale = 0.0f;

  // Threads per block (a multiple of 32): a launch parameter that changes no bit.
  static constexpr int kThreads = 128;
  int threads = kThreads;
  LaunchShape shape() const {
    check_attention_threads("Attention", threads);
    return {{T, heads, 1}, threads, (threads / kWarpSize) * sizeof(float)};
  }

  template <class Ctx>
  SPECDEC_HD void operator()(const Ctx& ctx) const {
    const int t = ctx.block_x(), h = ctx.block_y();
    const int g = h / (heads / kv_heads);  // grouped-query attention: heads share KV head g
    AttentionRow a;
    a.q = q + t * ldq + h * hd;
    a.k = k + g * hd, a.v = v + g * hd, a.ldkv = ldkv;
    a.mask = mask + static_cast<long long>(t) * cols, a.slot_pos = slot_pos;
    a.window = window, a.q_pos = window > 0 ? q_pos[t] : 0;
    a.s = scratch + (static_cast<long long>(t) * heads + h) * cols;
    a.out = out + t * ldo + h * hd;
    a.cols = cols, a.hd = hd, a.scale = scale;
    attend_row(ctx, a);
  }
};

// One sequence of a ragged batch on one layer: its cache's keys and values, and what its rows
// attend over. Its T = cols − first rows are rows [row0, row0 + T) of the batch's activations and
// go into cache slots [first, cols).
struct KvEntry {
  float* k = nullptr;                 // (capacity, ldkv) the layer's keys in this sequence's cache
  float* v = nullptr;                 // (capacity, ldkv) values
  const uint8_t* mask = nullptr;      // (T, cols)
  const int32_t* slot_pos = nullptr;  // (cols) the slots' positions
  float* scratch = nullptr;           // (T·heads, cols) attention's scores, then e_j
  int row0 = 0, first = 0, cols = 0;
};

// Each row's new key and value into its sequence's cache: row r of entry e goes to slot
// first_e + (r − row0_e) of entries[e].k / .v (one launch for the whole batch).
struct KvAppend {
  const float* k = nullptr;  // (rows, lds)
  const float* v = nullptr;  // (rows, lds)
  long long lds = 0;
  const KvEntry* entries = nullptr;     // (entries)
  const int32_t* row_entry = nullptr;   // (rows) each row's entry
  long long ldkv = 0;
  int rows = 0, width = 0;

  LaunchShape shape() const { return {{rows, 2, 1}, 128, 0}; }

  template <class Ctx>
  SPECDEC_HD void operator()(const Ctx& ctx) const {
    const int r = ctx.block_x();
    const KvEntry& e = entries[row_entry[r]];
    const bool keys = ctx.block_y() == 0;
    const float* s = (keys ? k : v) + r * lds;
    float* d = (keys ? e.k : e.v) + (e.first + r - e.row0) * ldkv;
    for (int c = ctx.thread(); c < width; c += ctx.block_dim()) d[c] = s[c];
  }
};

// Attention of a batch's rows, each over its own sequence's cache with that sequence's mask and
// positions: block (r, h) computes what Attention computes for row r − row0_e and head h of entry
// e alone, with the same body.
struct RaggedAttention {
  const float* q = nullptr;  // (rows, ldq): heads of hd contiguous
  long long ldq = 0;
  const KvEntry* entries = nullptr;    // (entries)
  const int32_t* row_entry = nullptr;  // (rows)
  const int32_t* q_pos = nullptr;      // (rows) positions of the query rows
  long long ldkv = 0;
  int window = 0;                      // sliding window, 0 = none
  float* out = nullptr;                // (rows, ldo)
  long long ldo = 0;
  int rows = 0, heads = 0, kv_heads = 0, hd = 0;
  float scale = 0.0f;
  int threads = Attention::kThreads;

  LaunchShape shape() const {
    check_attention_threads("RaggedAttention", threads);
    return {{rows, heads, 1}, threads, (threads / kWarpSize) * sizeof(float)};
  }

  template <class Ctx>
  SPECDEC_HD void operator()(const Ctx& ctx) const {
    const int r = ctx.block_x(), h = ctx.block_y();
    const KvEntry& e = entries[row_entry[r]];
    const int t = r - e.row0;
    const int g = h / (heads / kv_heads);
    AttentionRow a;
    a.q = q + r * ldq + h * hd;
    a.k = e.k + g * hd, a.v = e.v + g * hd, a.ldkv = ldkv;
    a.mask = e.mask + static_cast<long long>(t) * e.cols, a.slot_pos = e.slot_pos;
    a.window = window, a.q_pos = window > 0 ? q_pos[r] : 0;
    a.s = e.scratch + (static_cast<long long>(t) * heads + h) * e.cols;
    a.out = out + r * ldo + h * hd;
    a.cols = e.cols, a.hd = hd, a.scale = scale;
    attend_row(ctx, a);
  }
};

}  // namespace specdec::kernels
