#pragma once
// Every kernel against its reference twin, bitwise, on random shapes with tails and partial
// blocks; written once over a Device (the CPU grid emulator in the cpu suite, a real GPU in the
// gpu suite). A Device provides:
//   T* alloc<T>(n)                 memory that starts as NaN bytes (so unwritten outputs show)
//   T* upload(const std::vector<T>&)
//   std::vector<T> download(const T*, n)
//   void launch(const Kernel&)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/argmax.cuh"
#include "kernels/attention.cuh"
#include "kernels/elementwise.cuh"
#include "kernels/linear.cuh"
#include "kernels/rms_norm.cuh"
#include "kernels/rope.cuh"
#include "reference/core/half.hpp"
#include "reference/model/attention.hpp"
#include "reference/model/attention_mask.hpp"
#include "reference/model/kv_cache.hpp"
#include "reference/model/ops.hpp"
#include "reference/model/rope.hpp"
#include "reference/sampling/sampler.hpp"

namespace specdec::kernels::cases {

inline const char* name(WeightType w) { return w == WeightType::kF32 ? "F32" : w == WeightType::kBF16 ? "BF16" : "F16"; }

// Random fp32 values with a few exact zeros and negative zeros mixed in.
inline std::vector<float> random_values(std::mt19937& rng, std::size_t n, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned r = rng() % 64;
    v[i] = r == 0 ? 0.0f : r == 1 ? -0.0f : d(rng);
  }
  return v;
}

inline Matrix as_matrix(const std::vector<float>& v, int rows, int cols, long long ld) {
  Matrix m(rows, cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) m(r, c) = v[static_cast<std::size_t>(r * ld + c)];
  return m;
}

// Weights stored as W: the bytes a kernel reads, and the same values in fp32 for the reference.
struct StoredWeights {
  std::vector<uint16_t> narrow;  // BF16 / F16 bits
  std::vector<float> wide;       // the values, exactly
};
inline StoredWeights store(WeightType w, std::vector<float> v) {
  StoredWeights s;
  if (w != WeightType::kF32) {
    s.narrow.resize(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      s.narrow[i] = w == WeightType::kBF16 ? float_to_bfloat16(v[i]) : float_to_half(v[i]);
      v[i] = w == WeightType::kBF16 ? bfloat16_to_float(s.narrow[i]) : half_to_float(s.narrow[i]);
    }
  }
  s.wide = std::move(v);
  return s;
}
template <class Device>
const void* upload_weights(Device& dev, WeightType w, const StoredWeights& s) {
  if (w == WeightType::kF32) return dev.upload(s.wide);
  return dev.upload(s.narrow);
}

inline std::string exactly(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g (0x%08x)", static_cast<double>(f), u);
  return buf;
}

// "" when equal bitwise, else where the first difference is.
inline std::string first_difference(const float* got, const float* want, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (std::memcmp(got + i, want + i, sizeof(float)) != 0)
      return "element " + std::to_string(i) + ": got " + exactly(got[i]) + ", reference " + exactly(want[i]);
  }
  return "";
}

// Compares the (rows, cols) block of `got` (row stride ld) with the matrix `want`.
inline std::string first_difference(const std::vector<float>& got, long long ld, const Matrix& want) {
  for (Eigen::Index r = 0; r < want.rows(); ++r) {
    const std::string d = first_difference(got.data() + r * ld, want.row(r).data(), static_cast<std::size_t>(want.cols()));
    if (!d.empty()) return "row " + std::to_string(r) + " " + d;
  }
  return "";
}

struct LinearShape {
  int T, in;
  std::vector<int> outs;  // one matrix, or q/k/v
  bool bias;
};

// Linear<W, TPG> on one shape; TPG 1 is the one-token form (up to 8 tokens), 8 the general one.
template <WeightType W, int TPG = kTokensPerGroup, class Device>
void check_linear(Device& dev, unsigned seed, const LinearShape& s) {
  std::mt19937 rng(seed);
  const long long ldx = s.in + 3;  // a row stride that is not the width
  const std::vector<float> xv = random_values(rng, static_cast<std::size_t>(s.T * ldx));
  const Matrix x = as_matrix(xv, s.T, s.in, ldx);
  Linear<W, TPG> k;
  k.outputs = static_cast<int>(s.outs.size());
  k.x = dev.upload(xv);
  k.ldx = ldx;
  k.T = s.T;
  k.in = s.in;
  std::vector<Matrix> want;
  std::vector<float*> ys;
  for (std::size_t m = 0; m < s.outs.size(); ++m) {
    const int rows = s.outs[m];
    const StoredWeights w = store(W, random_values(rng, static_cast<std::size_t>(rows) * s.in, 0.5f));
    const std::vector<float> b = s.bias ? random_values(rng, static_cast<std::size_t>(rows)) : std::vector<float>();
    want.push_back(ops::linear(x, as_matrix(w.wide, rows, s.in, s.in),
                               s.bias ? Vector(Eigen::Map<const Vector>(b.data(), rows)) : Vector()));
    ys.push_back(dev.template alloc<float>(static_cast<std::size_t>(s.T) * (rows + 1)));
    k.out[m] = {upload_weights(dev, W, w), s.bias ? dev.upload(b) : nullptr, ys.back(), rows, rows + 1};
  }
  dev.launch(k);
  for (std::size_t m = 0; m < s.outs.size(); ++m) {
    const int rows = s.outs[m];
    const std::vector<float> got = dev.download(ys[m], static_cast<std::size_t>(s.T) * (rows + 1));
    EXPECT_EQ(first_difference(got, rows + 1, want[m]), "")
        << "Linear<" << name(W) << ", " << TPG << "> seed " << seed << ", T " << s.T << ", in " << s.in << ", matrix " << m << " of "
        << s.outs.size() << " (" << rows << " rows), bias " << s.bias;
    for (long long t = 0; t < s.T; ++t)
      EXPECT_TRUE(std::isnan(got[static_cast<std::size_t>(t * (rows + 1) + rows)]))
          << "Linear wrote past its output row (seed " << seed << ")";
  }
}

template <class Device>
void check_linear_all(Device& dev) {
  const std::vector<LinearShape> shapes = {
      {1, 64, {96}, false},   {3, 100, {37}, true},    {9, 7, {40}, false},          {17, 130, {21}, true},
      {64, 33, {19}, false},  {2, 136, {5, 3, 3}, true}, {8, 264, {33}, true},        {40, 16, {8, 4, 4}, false},
      {1, 0, {3}, true},
  };
  unsigned seed = 11;
  for (const LinearShape& s : shapes) {
    check_linear<WeightType::kF32>(dev, seed++, s);
    check_linear<WeightType::kBF16>(dev, seed++, s);
    check_linear<WeightType::kF16>(dev, seed++, s);
    if (s.T <= kMaxTokenSlices) {
      check_linear<WeightType::kF32, 1>(dev, seed++, s);
      check_linear<WeightType::kBF16, 1>(dev, seed++, s);
      check_linear<WeightType::kF16, 1>(dev, seed++, s);
    }
  }
}

template <WeightType W, int TPG = kTokensPerGroup, class Device>
void check_gate_up(Device& dev, unsigned seed, int T, int in, int features, bool bias) {
  std::mt19937 rng(seed);
  const std::vector<float> xv = random_values(rng, static_cast<std::size_t>(T) * in, 2.0f);
  const Matrix x = as_matrix(xv, T, in, in);
  const StoredWeights g = store(W, random_values(rng, static_cast<std::size_t>(features) * in, 0.5f));
  const StoredWeights u = store(W, random_values(rng, static_cast<std::size_t>(features) * in, 0.5f));
  const std::vector<float> bg = random_values(rng, static_cast<std::size_t>(features));
  const std::vector<float> bu = random_values(rng, static_cast<std::size_t>(features));
  const Vector vbg = bias ? Vector(Eigen::Map<const Vector>(bg.data(), features)) : Vector();
  const Vector vbu = bias ? Vector(Eigen::Map<const Vector>(bu.data(), features)) : Vector();
  const Matrix want = ops::swiglu(ops::linear(x, as_matrix(g.wide, features, in, in), vbg),
                                  ops::linear(x, as_matrix(u.wide, features, in, in), vbu));
  GateUpSwiglu<W, TPG> k;
  k.gate = upload_weights(dev, W, g);
  k.up = upload_weights(dev, W, u);
  k.gate_bias = bias ? dev.upload(bg) : nullptr;
  k.up_bias = bias ? dev.upload(bu) : nullptr;
  k.x = dev.upload(xv);
  k.ldx = in;
  k.act = dev.template alloc<float>(static_cast<std::size_t>(T) * features);
  k.ldact = features;
  k.T = T;
  k.in = in;
  k.features = features;
  dev.launch(k);
  const std::vector<float> got = dev.download(k.act, static_cast<std::size_t>(T) * features);
  EXPECT_EQ(first_difference(got, features, want), "")
      << "GateUpSwiglu<" << name(W) << ", " << TPG << "> seed " << seed << ", T " << T << ", in " << in << ", features " << features;
}

template <class Device>
void check_gate_up_all(Device& dev) {
  check_gate_up<WeightType::kF32>(dev, 101, 1, 72, 45, false);
  check_gate_up<WeightType::kBF16>(dev, 102, 5, 61, 30, true);
  check_gate_up<WeightType::kF16>(dev, 103, 12, 40, 17, true);
  check_gate_up<WeightType::kF32>(dev, 104, 33, 24, 9, true);
  check_gate_up<WeightType::kBF16, 1>(dev, 105, 1, 136, 20, true);
  check_gate_up<WeightType::kF16, 1>(dev, 106, 6, 50, 11, false);
}

template <class Device>
void check_rms_norm(Device& dev, unsigned seed, int rows, int n, bool in_place) {
  std::mt19937 rng(seed);
  const long long ld = n + 5;
  const std::vector<float> xv = random_values(rng, static_cast<std::size_t>(rows * ld), 3.0f);
  const std::vector<float> w = random_values(rng, static_cast<std::size_t>(n));
  const double eps = 1e-5;
  const Matrix want = ops::rms_norm(as_matrix(xv, rows, n, ld), Eigen::Map<const Vector>(w.data(), n), eps);
  RmsNorm k;
  float* x = dev.upload(xv);
  k.x = x;
  k.ldx = ld;
  k.w = dev.upload(w);
  k.y = in_place ? x : dev.template alloc<float>(static_cast<std::size_t>(rows * ld));
  k.ldy = ld;
  k.rows = rows;
  k.n = n;
  k.eps = static_cast<float>(eps);
  dev.launch(k);
  EXPECT_EQ(first_difference(dev.download(k.y, static_cast<std::size_t>(rows * ld)), ld, want), "")
      << "RmsNorm seed " << seed << ", rows " << rows << ", n " << n << ", in place " << in_place;
}

// Rows of random logits with ties at the maximum, +inf, -inf, NaN and rows of only -inf; the
// kernel's index must be sampler.cpp's argmax (or -1 where it refuses), first_nan the lowest NaN.
template <class Device>
void check_row_argmax(Device& dev, unsigned seed, int n, int threads) {
  std::mt19937 rng(seed);
  const int rows = 8;
  const long long ld = n + 3;
  std::vector<float> xv = random_values(rng, static_cast<std::size_t>(rows * ld), 4.0f);
  auto at = [&](int r, int i) -> float& { return xv[static_cast<std::size_t>(r * ld + i)]; };
  const float inf = std::numeric_limits<float>::infinity();
  at(1, n / 3) = at(1, n - 1) = 50.0f;                     // a tie: the lower index wins
  at(2, 0) = -inf;                                         // -inf at index 0 never wins
  at(3, n / 2) = inf, at(3, n - 2) = inf;                  // +inf wins, the first one
  at(4, n / 4) = std::numeric_limits<float>::quiet_NaN();  // NaN: reported, never chosen
  at(4, n - 1) = std::numeric_limits<float>::quiet_NaN();
  for (int i = 0; i < n; ++i) at(5, i) = -inf;  // nothing can be chosen
  for (int i = 0; i < n; ++i) at(6, i) = 1.0f;  // all equal: index 0
  at(7, n - 1) = 1e30f;
  RowArgmax k;
  k.x = dev.upload(xv);
  k.ldx = ld;
  k.rows = rows;
  k.n = n;
  k.index = dev.template alloc<int32_t>(rows);
  k.first_nan = dev.template alloc<int32_t>(rows);
  k.threads = threads;
  dev.launch(k);
  const std::vector<int32_t> index = dev.download(k.index, rows), nan = dev.download(k.first_nan, rows);
  for (int r = 0; r < rows; ++r) {
    const float* row = &xv[static_cast<std::size_t>(r * ld)];
    int want_nan = n;
    for (int i = n - 1; i >= 0; --i)
      if (std::isnan(row[i])) want_nan = i;
    int want = -1;  // the largest non-NaN logit above -inf, lowest index; -1 if none
    float best = -inf;
    for (int i = 0; i < n; ++i)
      if (!std::isnan(row[i]) && row[i] > best) best = row[i], want = i;
    if (want_nan == n && want >= 0) {
      EXPECT_EQ(want, argmax(row, n)) << "the case's own answer, row " << r;
    }
    const std::string where = "RowArgmax seed " + std::to_string(seed) + ", n " + std::to_string(n) + ", threads " +
                              std::to_string(threads) + ", row " + std::to_string(r);
    EXPECT_EQ(index[static_cast<std::size_t>(r)], want) << where;
    EXPECT_EQ(nan[static_cast<std::size_t>(r)], want_nan) << where;
  }
}

template <class Device>
void check_rope(Device& dev, unsigned seed, int T, int heads, int hd) {
  std::mt19937 rng(seed);
  ModelConfig c;
  c.head_dim = hd;
  c.rope_theta = 500000.0;
  const Rope rope(c);
  const long long ld = static_cast<long long>(heads) * hd + 2;
  std::vector<float> xv = random_values(rng, static_cast<std::size_t>(T * ld));
  std::vector<float> cs, sn;
  std::vector<float> want = xv;
  for (int t = 0; t < T; ++t) {
    const Rope::Angles a = rope.angles(static_cast<int>(rng() % 5000));
    cs.insert(cs.end(), a.cos.begin(), a.cos.end());
    sn.insert(sn.end(), a.sin.begin(), a.sin.end());
    rope.apply(want.data() + t * ld, heads, a);
  }
  RopeApply k;
  k.x = dev.upload(xv);
  k.ldx = ld;
  k.cos = dev.upload(cs);
  k.sin = dev.upload(sn);
  k.T = T;
  k.heads = heads;
  k.hd = hd;
  dev.launch(k);
  EXPECT_EQ(first_difference(dev.download(k.x, xv.size()).data(), want.data(), want.size()), "")
      << "RopeApply seed " << seed << ", T " << T << ", heads " << heads << ", hd " << hd;
}

template <WeightType W, class Device>
void check_embedding(Device& dev, unsigned seed, int T, int vocab, int width) {
  std::mt19937 rng(seed);
  const StoredWeights table = store(W, random_values(rng, static_cast<std::size_t>(vocab) * width));
  std::vector<int32_t> ids(static_cast<std::size_t>(T));
  for (int32_t& id : ids) id = static_cast<int32_t>(rng() % vocab);
  ids.back() = vocab;  // out of range: a NaN row, never a read past the table
  EmbeddingGather<W> k;
  k.table = upload_weights(dev, W, table);
  k.ids = dev.upload(ids);
  k.y = dev.template alloc<float>(static_cast<std::size_t>(T) * width);
  k.ldy = width;
  k.T = T;
  k.vocab = vocab;
  k.width = width;
  dev.launch(k);
  const std::vector<float> got = dev.download(k.y, static_cast<std::size_t>(T) * width);
  for (int t = 0; t + 1 < T; ++t)
    EXPECT_EQ(first_difference(got.data() + t * width, table.wide.data() + ids[t] * width, width), "")
        << "EmbeddingGather<" << name(W) << "> seed " << seed << ", token " << t << " (id " << ids[t] << ")";
  for (int i = 0; i < width; ++i) EXPECT_TRUE(std::isnan(got[static_cast<std::size_t>((T - 1) * width + i)]));
}

template <class Device>
void check_residual_add(Device& dev, unsigned seed, long long n) {
  std::mt19937 rng(seed);
  const std::vector<float> a = random_values(rng, static_cast<std::size_t>(n));
  const std::vector<float> b = random_values(rng, static_cast<std::size_t>(n));
  const Vector want = Eigen::Map<const Vector>(a.data(), n) + Eigen::Map<const Vector>(b.data(), n);
  ResidualAdd k;
  float* pa = dev.upload(a);
  k.a = pa;
  k.b = dev.upload(b);
  k.y = pa;  // in place, as the forward uses it
  k.n = n;
  dev.launch(k);
  EXPECT_EQ(first_difference(dev.download(k.y, static_cast<std::size_t>(n)).data(), want.data(), static_cast<std::size_t>(n)), "")
      << "ResidualAdd seed " << seed << ", n " << n;
}

struct AttentionShape {
  int T, heads, kv_heads, hd, prefix, window;
};

// A cached prefix of `prefix` slots and T new tokens forming a random tree (the draft tree mask);
// with more than eight tokens, row 0 sees no key at all (its output is zero).
template <class Device>
void check_attention(Device& dev, unsigned seed, const AttentionShape& s) {
  std::mt19937 rng(seed);
  const int cols = s.prefix + s.T, kv_dim = s.kv_heads * s.hd;
  const long long ldq = static_cast<long long>(s.heads) * s.hd + 1, ldkv = kv_dim + 3;
  const std::vector<float> q = random_values(rng, static_cast<std::size_t>(s.T * ldq), 1.5f);
  const std::vector<float> kc = random_values(rng, static_cast<std::size_t>(cols * ldkv), 1.5f);
  const std::vector<float> vc = random_values(rng, static_cast<std::size_t>(cols * ldkv));
  std::vector<int> parents(static_cast<std::size_t>(s.T));
  for (int t = 0; t < s.T; ++t) parents[static_cast<std::size_t>(t)] = t == 0 ? -1 : static_cast<int>(rng() % (t + 1)) - 1;
  AttentionMask mask = AttentionMask::tree(s.prefix, parents);
  if (s.T > 8)
    for (int j = 0; j < cols; ++j) mask.set(0, j, false);
  std::vector<uint8_t> mask_bytes(static_cast<std::size_t>(s.T) * cols);
  for (int t = 0; t < s.T; ++t)
    for (int j = 0; j < cols; ++j) mask_bytes[static_cast<std::size_t>(t) * cols + j] = mask.allowed(t, j) ? 1 : 0;
  std::vector<int32_t> slot_pos(static_cast<std::size_t>(cols)), q_pos(static_cast<std::size_t>(s.T));
  for (int j = 0; j < s.prefix; ++j) slot_pos[static_cast<std::size_t>(j)] = j;
  for (int t = 0; t < s.T; ++t) {
    int depth = 0;
    for (int p = parents[static_cast<std::size_t>(t)]; p >= 0; p = parents[static_cast<std::size_t>(p)]) ++depth;
    q_pos[static_cast<std::size_t>(t)] = s.prefix + depth;
    slot_pos[static_cast<std::size_t>(s.prefix + t)] = q_pos[static_cast<std::size_t>(t)];
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.hd));
  std::vector<float> want(static_cast<std::size_t>(s.T * ldq), 0.0f);
  for (int t = 0; t < s.T; ++t) {
    for (int h = 0; h < s.heads; ++h) {
      const int g = h / (s.heads / s.kv_heads);
      std::vector<const float*> keys, values;
      for (int j = 0; j < cols; ++j) {
        if (!mask.allowed(t, j)) continue;
        if (s.window > 0 && q_pos[static_cast<std::size_t>(t)] - slot_pos[static_cast<std::size_t>(j)] >= s.window) continue;
        keys.push_back(kc.data() + j * ldkv + g * s.hd);
        values.push_back(vc.data() + j * ldkv + g * s.hd);
      }
      attend(q.data() + t * ldq + h * s.hd, keys.data(), values.data(), static_cast<int>(keys.size()), s.hd, scale,
             want.data() + t * ldq + h * s.hd);
    }
  }
  Attention k;
  k.q = dev.upload(q);
  k.ldq = ldq;
  k.k = dev.upload(kc);
  k.v = dev.upload(vc);
  k.ldkv = ldkv;
  k.mask = dev.upload(mask_bytes);
  k.q_pos = dev.upload(q_pos);
  k.slot_pos = dev.upload(slot_pos);
  k.window = s.window;
  std::vector<float> out_init(static_cast<std::size_t>(s.T * ldq), 0.0f);
  k.out = dev.upload(out_init);
  k.ldo = ldq;
  k.scratch = dev.template alloc<float>(static_cast<std::size_t>(s.T) * s.heads * cols);
  k.T = s.T;
  k.heads = s.heads;
  k.kv_heads = s.kv_heads;
  k.hd = s.hd;
  k.cols = cols;
  k.scale = scale;
  dev.launch(k);
  EXPECT_EQ(first_difference(dev.download(k.out, want.size()).data(), want.data(), want.size()), "")
      << "Attention seed " << seed << ", T " << s.T << ", heads " << s.heads << "/" << s.kv_heads << ", hd " << s.hd
      << ", prefix " << s.prefix << ", window " << s.window;
}

template <class Device>
void check_attention_all(Device& dev) {
  unsigned seed = 301;
  for (const AttentionShape& s : {AttentionShape{1, 2, 1, 16, 0, 0}, AttentionShape{1, 4, 2, 64, 300, 0},
                                  AttentionShape{7, 4, 2, 20, 33, 0}, AttentionShape{16, 6, 3, 24, 150, 0},
                                  AttentionShape{5, 2, 2, 8, 40, 3}, AttentionShape{9, 8, 1, 12, 0, 0}})
    check_attention(dev, seed++, s);
}

// One sequence of a ragged batch: `prefix` cached slots and T new rows forming a random tree.
struct RaggedSequence {
  int prefix, T;
};

// A batch of sequences, each with its own cache block (two spare slots past its new ones), tree
// mask and positions. KvAppend writes every row's new key and value into its own sequence's slots
// (and nothing else); RaggedAttention then gives every row what `attend` gives it over the visible
// slots of its own sequence alone.
template <class Device>
void check_ragged_attention(Device& dev, unsigned seed, int heads, int kv_heads, int hd, int window,
                            const std::vector<RaggedSequence>& seqs) {
  std::mt19937 rng(seed);
  const int N = static_cast<int>(seqs.size()), kv_dim = kv_heads * hd;
  const long long ldq = static_cast<long long>(heads) * hd + 1, ldkv = kv_dim + 3, lds = kv_dim + 2;
  int rows = 0;
  for (const RaggedSequence& s : seqs) rows += s.T;
  const std::vector<float> q = random_values(rng, static_cast<std::size_t>(rows * ldq), 1.5f);
  const std::vector<float> new_k = random_values(rng, static_cast<std::size_t>(rows * lds), 1.5f);
  const std::vector<float> new_v = random_values(rng, static_cast<std::size_t>(rows * lds));
  std::vector<int32_t> row_entry, q_pos;
  std::vector<KvEntry> entries(static_cast<std::size_t>(N));
  std::vector<std::vector<float>> want_k(static_cast<std::size_t>(N)), want_v(static_cast<std::size_t>(N));
  std::vector<float> want(static_cast<std::size_t>(rows * ldq), 0.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int e = 0; e < N; ++e) {
    const RaggedSequence& s = seqs[static_cast<std::size_t>(e)];
    const int cols = s.prefix + s.T, capacity = cols + 2, row0 = static_cast<int>(row_entry.size());
    std::vector<float> kc = random_values(rng, static_cast<std::size_t>(capacity * ldkv), 1.5f);
    std::vector<float> vc = random_values(rng, static_cast<std::size_t>(capacity * ldkv));
    KvEntry& d = entries[static_cast<std::size_t>(e)];
    d.k = dev.upload(kc), d.v = dev.upload(vc);  // before the append: its slots hold junk
    for (int t = 0; t < s.T; ++t)
      for (int c = 0; c < kv_dim; ++c) {
        kc[static_cast<std::size_t>((s.prefix + t) * ldkv + c)] = new_k[static_cast<std::size_t>((row0 + t) * lds + c)];
        vc[static_cast<std::size_t>((s.prefix + t) * ldkv + c)] = new_v[static_cast<std::size_t>((row0 + t) * lds + c)];
      }
    std::vector<int> parents(static_cast<std::size_t>(s.T));
    for (int t = 0; t < s.T; ++t) parents[static_cast<std::size_t>(t)] = t == 0 ? -1 : static_cast<int>(rng() % (t + 1)) - 1;
    const AttentionMask mask = AttentionMask::tree(s.prefix, parents);
    std::vector<uint8_t> mask_bytes(static_cast<std::size_t>(s.T) * cols);
    for (int t = 0; t < s.T; ++t)
      for (int j = 0; j < cols; ++j) mask_bytes[static_cast<std::size_t>(t) * cols + j] = mask.allowed(t, j) ? 1 : 0;
    std::vector<int32_t> slot_pos(static_cast<std::size_t>(cols));
    for (int j = 0; j < s.prefix; ++j) slot_pos[static_cast<std::size_t>(j)] = j;
    for (int t = 0; t < s.T; ++t) {
      int depth = 0;
      for (int p = parents[static_cast<std::size_t>(t)]; p >= 0; p = parents[static_cast<std::size_t>(p)]) ++depth;
      slot_pos[static_cast<std::size_t>(s.prefix + t)] = s.prefix + depth;
      q_pos.push_back(s.prefix + depth);
      row_entry.push_back(e);
    }
    for (int t = 0; t < s.T; ++t) {
      for (int h = 0; h < heads; ++h) {
        const int g = h / (heads / kv_heads);
        std::vector<const float*> keys, values;
        for (int j = 0; j < cols; ++j) {
          if (!mask.allowed(t, j)) continue;
          if (window > 0 && q_pos[static_cast<std::size_t>(row0 + t)] - slot_pos[static_cast<std::size_t>(j)] >= window) continue;
          keys.push_back(kc.data() + j * ldkv + g * hd);
          values.push_back(vc.data() + j * ldkv + g * hd);
        }
        attend(q.data() + (row0 + t) * ldq + h * hd, keys.data(), values.data(), static_cast<int>(keys.size()), hd, scale,
               want.data() + (row0 + t) * ldq + h * hd);
      }
    }
    d.mask = dev.upload(mask_bytes), d.slot_pos = dev.upload(slot_pos);
    d.scratch = dev.template alloc<float>(static_cast<std::size_t>(s.T) * heads * cols);
    d.row0 = row0, d.first = s.prefix, d.cols = cols;
    want_k[static_cast<std::size_t>(e)] = std::move(kc), want_v[static_cast<std::size_t>(e)] = std::move(vc);
  }
  const KvEntry* d_entries = dev.upload(entries);
  const int32_t* d_row_entry = dev.upload(row_entry);
  KvAppend append{dev.upload(new_k), dev.upload(new_v), lds, d_entries, d_row_entry, ldkv, rows, kv_dim};
  dev.launch(append);
  RaggedAttention k;
  k.q = dev.upload(q), k.ldq = ldq, k.entries = d_entries, k.row_entry = d_row_entry, k.q_pos = dev.upload(q_pos);
  k.ldkv = ldkv, k.window = window;
  std::vector<float> out_init(static_cast<std::size_t>(rows * ldq), 0.0f);
  k.out = dev.upload(out_init), k.ldo = ldq;
  k.rows = rows, k.heads = heads, k.kv_heads = kv_heads, k.hd = hd, k.scale = scale;
  dev.launch(k);
  const std::string where = "seed " + std::to_string(seed) + ", " + std::to_string(N) + " sequences, heads " +
                            std::to_string(heads) + "/" + std::to_string(kv_heads) + ", hd " + std::to_string(hd) +
                            ", window " + std::to_string(window);
  for (int e = 0; e < N; ++e) {
    const std::size_t n = want_k[static_cast<std::size_t>(e)].size();
    const KvEntry& d = entries[static_cast<std::size_t>(e)];
    EXPECT_EQ(first_difference(dev.download(d.k, n).data(), want_k[static_cast<std::size_t>(e)].data(), n), "")
        << "KvAppend keys, " << where << ", sequence " << e;
    EXPECT_EQ(first_difference(dev.download(d.v, n).data(), want_v[static_cast<std::size_t>(e)].data(), n), "")
        << "KvAppend values, " << where << ", sequence " << e;
  }
  EXPECT_EQ(first_difference(dev.download(k.out, want.size()).data(), want.data(), want.size()), "") << "RaggedAttention " << where;
}

template <class Device>
void check_ragged_attention_all(Device& dev) {
  check_ragged_attention(dev, 321, 2, 1, 16, 0, {{0, 1}});
  check_ragged_attention(dev, 322, 4, 2, 20, 0, {{33, 7}, {0, 1}, {5, 3}});
  check_ragged_attention(dev, 323, 6, 3, 24, 0, {{150, 2}, {1, 6}, {0, 4}, {12, 1}});
  check_ragged_attention(dev, 324, 2, 2, 8, 3, {{40, 5}, {2, 2}});
}

// The KV cache's compaction: gather the listed slots into a scratch buffer, then back to
// [start, start + n), exactly as DenseKVCache::gather moves them.
template <class Device>
void check_kv_compaction(Device& dev, unsigned seed, int length, int kv_dim, int start, int n) {
  std::mt19937 rng(seed);
  DenseKVCache cache(1, kv_dim, length);
  std::vector<int32_t> pos(static_cast<std::size_t>(length));
  for (int i = 0; i < length; ++i) pos[static_cast<std::size_t>(i)] = i;
  cache.append(length, pos.data());
  const std::vector<float> kv = random_values(rng, static_cast<std::size_t>(length) * kv_dim);
  for (int i = 0; i < length; ++i)
    for (int d = 0; d < kv_dim; ++d) cache.keys(0)(i, d) = kv[static_cast<std::size_t>(i * kv_dim + d)];
  std::vector<int> order(static_cast<std::size_t>(length - start));
  for (int i = 0; i < length - start; ++i) order[static_cast<std::size_t>(i)] = start + i;
  std::shuffle(order.begin(), order.end(), rng);
  const std::vector<int> slots(order.begin(), order.begin() + n);
  cache.gather(start, slots);

  float* dk = dev.upload(kv);
  float* scratch = dev.template alloc<float>(static_cast<std::size_t>(n) * kv_dim);
  const std::vector<int32_t> rows(slots.begin(), slots.end());
  GatherRows to_scratch{dk, kv_dim, dev.upload(rows), scratch, kv_dim, n, kv_dim};
  dev.launch(to_scratch);
  GatherRows back{scratch, kv_dim, nullptr, dk + static_cast<std::size_t>(start) * kv_dim, kv_dim, n, kv_dim};
  dev.launch(back);
  const std::vector<float> got = dev.download(dk, kv.size());
  for (int i = 0; i < start + n; ++i)
    EXPECT_EQ(first_difference(got.data() + i * kv_dim, cache.keys(0).row(i).data(), static_cast<std::size_t>(kv_dim)), "")
        << "KV compaction seed " << seed << ", slot " << i << " (start " << start << ", " << n << " moved)";
}

}  // namespace specdec::kernels::cases
