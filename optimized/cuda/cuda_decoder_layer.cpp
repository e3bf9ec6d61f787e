#include "optimized/cuda/cuda_decoder_layer.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "optimized/cuda/device_ops.hpp"

namespace specdec::cuda {

DeviceTokenBlock upload_token_block(DeviceRuntime& rt, const TokenBlock& block, const CudaKVCache& cache, int head_dim,
                                    LayerScratch& s) {
  DeviceTokenBlock b;
  b.T = static_cast<int>(block.positions.size());
  b.first = block.first_slot;
  b.cols = b.first + b.T;
  const std::size_t uT = static_cast<std::size_t>(b.T);
  std::vector<uint8_t> mask_bytes(uT * b.cols);
  for (int t = 0; t < b.T; ++t)
    for (int j = 0; j < b.cols; ++j) mask_bytes[static_cast<std::size_t>(t) * b.cols + j] = block.mask->allowed(t, j) ? 1 : 0;
  uint8_t* mask = grown(rt, s.mask, mask_bytes.size());
  rt.copy_to_device(mask, mask_bytes.data(), mask_bytes.size());
  int32_t* q_pos = grown(rt, s.q_pos, uT);
  rt.copy_to_device(q_pos, block.positions.data(), sizeof(int32_t) * uT);
  int32_t* slot_pos = grown(rt, s.slot_pos, static_cast<std::size_t>(b.cols));
  rt.copy_to_device(slot_pos, cache.positions().data(), sizeof(int32_t) * b.cols);
  const int half = head_dim / 2;
  std::vector<float> cs(uT * half), sn(uT * half);
  for (int t = 0; t < b.T; ++t) {
    const Rope::Angles& a = block.angles[static_cast<std::size_t>(t)];
    std::copy(a.cos.begin(), a.cos.end(), cs.begin() + static_cast<std::ptrdiff_t>(t) * half);
    std::copy(a.sin.begin(), a.sin.end(), sn.begin() + static_cast<std::ptrdiff_t>(t) * half);
  }
  float* cos = grown(rt, s.cos, cs.size());
  float* sin = grown(rt, s.sin, sn.size());
  rt.copy_to_device(cos, cs.data(), sizeof(float) * cs.size());
  rt.copy_to_device(sin, sn.data(), sizeof(float) * sn.size());
  b.mask = mask, b.q_pos = q_pos, b.slot_pos = slot_pos, b.cos = cos, b.sin = sin;
  return b;
}

void decoder_layer(DeviceRuntime& rt, const DeviceLayer& w, const ModelConfig& c, int l, const float* attn_in,
                   int in_width, CudaKVCache& cache, const DeviceTokenBlock& b, float* x, LayerScratch& s) {
  const int T = b.T;
  const std::size_t uT = static_cast<std::size_t>(T);
  const int H = c.hidden_size, I = c.intermediate_size;
  const int nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  const int qd = c.q_dim(), kvd = c.kv_dim(), qkvd = qd + 2 * kvd;
  float* qkv = grown(rt, s.qkv, uT * qkvd);  // (T, q | k | v)
  float* attn = grown(rt, s.attn, uT * qd);  // (T, nh·hd)
  float* tmp = grown(rt, s.tmp, uT * H);     // (T, H) a sublayer's output
  float* xn = grown(rt, s.xn, uT * H);       // (T, H) post-attention norm
  float* act = grown(rt, s.act, uT * I);     // (T, I)
  float* scores = grown(rt, s.scores, uT * nh * b.cols);

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
  // The new keys and values into their cache slots.
  rt.launch(kernels::GatherRows{qkv + qd, qkvd, nullptr, cache.keys(l) + static_cast<std::size_t>(b.first) * kvd, kvd, T, kvd});
  rt.launch(kernels::GatherRows{qkv + qd + kvd, qkvd, nullptr, cache.values(l) + static_cast<std::size_t>(b.first) * kvd, kvd,
                                T, kvd});
  kernels::Attention a;
  a.q = qkv, a.ldq = qkvd, a.k = cache.keys(l), a.v = cache.values(l), a.ldkv = kvd, a.mask = b.mask, a.q_pos = b.q_pos,
  a.slot_pos = b.slot_pos, a.window = c.layer_sliding_window(l), a.out = attn, a.ldo = qd, a.scratch = scores, a.T = T,
  a.heads = nh, a.kv_heads = nkv, a.hd = hd, a.cols = b.cols, a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
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
