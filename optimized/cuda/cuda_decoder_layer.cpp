#include "optimized/cuda/cuda_decoder_layer.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "optimized/cuda/device_ops.hpp"

namespace specdec::cuda {

DeviceTokenBlock upload_token_blocks(DeviceRuntime& rt, const std::vector<TokenBlock>& blocks,
                                     const std::vector<CudaKVCache*>& caches, int heads, int head_dim, LayerScratch& s) {
  const int N = static_cast<int>(blocks.size());
  const int L = caches.front()->layers();
  const int half = head_dim / 2;
  // Host copies of everything, then one upload per buffer. Offsets per sequence into the mask,
  // the slot positions and the scores; rows stacked in sequence order.
  std::vector<int32_t> row_entry, q_pos, slot_pos;
  std::vector<float> cs, sn;
  std::vector<uint8_t> mask_bytes;
  std::vector<std::size_t> mask_at(N), slot_at(N), scores_at(N);
  std::vector<int> row0(N);
  std::size_t n_scores = 0;
  for (int e = 0; e < N; ++e) {
    const TokenBlock& block = blocks[static_cast<std::size_t>(e)];
    const CudaKVCache& cache = *caches[static_cast<std::size_t>(e)];
    const int T = static_cast<int>(block.positions.size()), cols = block.first_slot + T;
    row0[e] = static_cast<int>(row_entry.size());
    row_entry.insert(row_entry.end(), static_cast<std::size_t>(T), e);
    q_pos.insert(q_pos.end(), block.positions.begin(), block.positions.end());
    for (int t = 0; t < T; ++t) {
      const Rope::Angles& a = block.angles[static_cast<std::size_t>(t)];
      cs.insert(cs.end(), a.cos.begin(), a.cos.begin() + half);
      sn.insert(sn.end(), a.sin.begin(), a.sin.begin() + half);
    }
    mask_at[e] = mask_bytes.size();
    for (int t = 0; t < T; ++t)
      for (int j = 0; j < cols; ++j) mask_bytes.push_back(block.mask->allowed(t, j) ? 1 : 0);
    slot_at[e] = slot_pos.size();
    slot_pos.insert(slot_pos.end(), cache.positions().begin(), cache.positions().begin() + cols);
    scores_at[e] = n_scores;
    n_scores += static_cast<std::size_t>(T) * heads * cols;
  }
  DeviceTokenBlock b;
  b.rows = static_cast<int>(row_entry.size());
  b.entries = N;
  auto upload = [&rt](auto& buffer, const auto& host) {
    auto* d = grown(rt, buffer, host.size());
    rt.copy_to_device(d, host.data(), sizeof(host[0]) * host.size());
    return d;
  };
  b.row_entry = upload(s.row_entry, row_entry);
  b.q_pos = upload(s.q_pos, q_pos);
  b.cos = upload(s.cos, cs);
  b.sin = upload(s.sin, sn);
  const uint8_t* mask = upload(s.mask, mask_bytes);
  const int32_t* slots = upload(s.slot_pos, slot_pos);
  float* scores = grown(rt, s.scores, n_scores);
  std::vector<kernels::KvEntry> kv(static_cast<std::size_t>(L) * N);  // (L, N)
  for (int l = 0; l < L; ++l) {
    for (int e = 0; e < N; ++e) {
      const CudaKVCache& cache = *caches[static_cast<std::size_t>(e)];
      kernels::KvEntry& d = kv[static_cast<std::size_t>(l) * N + e];
      const TokenBlock& block = blocks[static_cast<std::size_t>(e)];
      d.k = cache.keys(l), d.v = cache.values(l);
      d.mask = mask + mask_at[e], d.slot_pos = slots + slot_at[e], d.scratch = scores + scores_at[e];
      d.row0 = row0[e], d.first = block.first_slot, d.cols = block.first_slot + static_cast<int>(block.positions.size());
    }
  }
  b.kv = upload(s.kv, kv);
  return b;
}

void decoder_layer(DeviceRuntime& rt, const DeviceLayer& w, const ModelConfig& c, int l, const float* attn_in,
                   int in_width, const DeviceTokenBlock& b, float* x, LayerScratch& s) {
  const int T = b.rows;
  const std::size_t uT = static_cast<std::size_t>(T);
  const int H = c.hidden_size, I = c.intermediate_size;
  const int nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  const int qd = c.q_dim(), kvd = c.kv_dim(), qkvd = qd + 2 * kvd;
  float* qkv = grown(rt, s.qkv, uT * qkvd);  // (T, q | k | v)
  float* attn = grown(rt, s.attn, uT * qd);  // (T, nh·hd)
  float* tmp = grown(rt, s.tmp, uT * H);     // (T, H) a sublayer's output
  float* xn = grown(rt, s.xn, uT * H);       // (T, H) post-attention norm
  float* act = grown(rt, s.act, uT * I);     // (T, I)

  linear(rt, {{&w.q, or_null(w.q_bias), qkv, qkvd}, {&w.k, or_null(w.k_bias), qkv + qd, qkvd},
              {&w.v, or_null(w.v_bias), qkv + qd + kvd, qkvd}},
         attn_in, in_width, T, in_width);
  if (w.q_norm) {  // Qwen3: RMSNorm over each head before RoPE, in place
    for (int t = 0; t < T; ++t) {
      float* q = qkv + static_cast<std::size_t>(t) * qkvd;
      rms_norm(rt, q, hd, w.q_norm.get(), q, hd, nh, hd, c.rms_norm_eps);
      rms_norm(rt, q + qd, hd, w.k_norm.get(), q + qd, hd, nkv, hd, c.rms_norm_eps);
    }
  }
  rt.launch(kernels::RopeApply{qkv, qkvd, b.cos, b.sin, T, nh, hd});
  rt.launch(kernels::RopeApply{qkv + qd, qkvd, b.cos, b.sin, T, nkv, hd});
  // The new keys and values into their sequences' cache slots, then each row over its own cache.
  const kernels::KvEntry* kv = b.layer(l);
  rt.launch(kernels::KvAppend{qkv + qd, qkv + qd + kvd, qkvd, kv, b.row_entry, kvd, T, kvd});
  kernels::RaggedAttention a;
  a.q = qkv, a.ldq = qkvd, a.entries = kv, a.row_entry = b.row_entry, a.q_pos = b.q_pos, a.ldkv = kvd,
  a.window = c.layer_sliding_window(l), a.out = attn, a.ldo = qd, a.rows = T, a.heads = nh, a.kv_heads = nkv, a.hd = hd,
  a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  a.threads = rt.launch_config().attention_threads;
  rt.launch(a);
  linear(rt, {{&w.o, or_null(w.o_bias), tmp, H}}, attn, qd, T, qd);
  rt.launch(kernels::ResidualAdd{x, tmp, x, static_cast<long long>(uT * H)});
  rms_norm(rt, x, H, w.post_norm.get(), xn, H, T, H, c.rms_norm_eps);
  gate_up_swiglu(rt, w.gate, w.up, or_null(w.gate_bias), or_null(w.up_bias), xn, H, act, I, T);
  linear(rt, {{&w.down, or_null(w.down_bias), tmp, H}}, act, I, T, I);
  rt.launch(kernels::ResidualAdd{x, tmp, x, static_cast<long long>(uT * H)});
}

}  // namespace specdec::cuda
