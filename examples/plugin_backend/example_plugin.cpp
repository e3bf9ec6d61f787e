// A plug-in backend for specdec (runtime/plugin_api.hpp): the Llama-family target
// forward with the linear layers (q/k/v/o projections, the MLP, the LM head) computed by a
// hand-written blocked matrix product, `blocked_linear` below. Everything else - embeddings, RMSNorm,
// RoPE, the attention of one head (softmax with the project's exact::exp), SwiGLU, the KV cache -
// calls the reference's own functions, so the plug-in's output is bitwise the reference's as long
// as blocked_linear reproduces ops::linear's reduction order (README.md).
//
// Built with EXAMPLE_PLUGIN_DROP_LANE=1, blocked_linear forgets one of its eight partial sums: the
// deliberately wrong variant that `specdec validate` must reject.
#include <cmath>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/plugin_api.hpp"
#include "reference/core/error.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/argmax_rows.hpp"
#include "reference/model/attention.hpp"
#include "reference/model/decoder_layer.hpp"
#include "reference/model/ops.hpp"
#include "reference/model/precision.hpp"
#include "reference/model/transformer.hpp"

#ifndef EXAMPLE_PLUGIN_DROP_LANE
#define EXAMPLE_PLUGIN_DROP_LANE 0
#endif

namespace example {

using specdec::Matrix;
using specdec::Vector;

// y = x · Wᵀ (+ bias); x: (T, in), W: (out, in), y: (T, out).
//
// The product is computed in tiles of kTileT tokens × kTileO output features: the tile's kTileT
// rows of x and kTileO rows of W are streamed once, 8 columns at a time, into 8 partial sums per
// output element. Each element's arithmetic is exactly the reference's (ops::dot,
// docs/exactness.md): lane l accumulates x[i]·w[i] for i ≡ l (mod 8) by one fused multiply-add
// each, the n mod 8 tail goes into a separate sum, and the lanes are combined pairwise as
// (((a0+a4)+(a1+a5))+((a2+a6)+(a3+a7))) + tail, then the bias is added. The tiling changes which
// elements are computed together, never the order within one, so the result does not depend on T,
// on the tile sizes or on the number of threads.
constexpr int kTileT = 2;
constexpr int kTileO = 4;

inline float combine(const float* a, float tail) {
#if EXAMPLE_PLUGIN_DROP_LANE
  return (((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + a[3])) + tail;  // wrong: lane 7 dropped
#else
  return (((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]))) + tail;
#endif
}

// One tile: y[t0 + a][o0 + b] for a < nt, b < no. The "fma" clone, picked at load time on CPUs
// with the instruction, turns std::fma into vfmadd; the default clone calls fmaf, which rounds
// the same way (once), as ops::dot does.
__attribute__((target_clones("fma", "default"))) void tile(const float* const* xr, int nt, const float* const* wr, int no,
                                                            int n, const float* bias, float* y, int y_stride) {
  float acc[kTileT][kTileO][8] = {};
  float tail[kTileT][kTileO] = {};
  const int n8 = n / 8 * 8;
  for (int i = 0; i < n8; i += 8) {
    for (int a = 0; a < nt; ++a) {
      for (int b = 0; b < no; ++b) {
        for (int l = 0; l < 8; ++l) acc[a][b][l] = std::fma(xr[a][i + l], wr[b][i + l], acc[a][b][l]);
      }
    }
  }
  for (int i = n8; i < n; ++i) {
    for (int a = 0; a < nt; ++a)
      for (int b = 0; b < no; ++b) tail[a][b] = std::fma(xr[a][i], wr[b][i], tail[a][b]);
  }
  for (int a = 0; a < nt; ++a)
    for (int b = 0; b < no; ++b) y[a * y_stride + b] = combine(acc[a][b], tail[a][b]) + (bias ? bias[b] : 0.0f);
}

Matrix blocked_linear(const Matrix& x, const Matrix& w, const Vector& bias = Vector()) {
  const int T = static_cast<int>(x.rows());
  const int n = static_cast<int>(x.cols());
  const int out = static_cast<int>(w.rows());
  if (w.cols() != n) {
    throw specdec::Error("example plugin: linear layer of input width " + std::to_string(w.cols()) + " given rows of width " +
                         std::to_string(n));
  }
  // Row-major y (T, out), as specdec::Matrix is.
  Matrix y(T, out);
  const int o_tiles = (out + kTileO - 1) / kTileO;
#pragma omp parallel for schedule(static) if (static_cast<long long>(T) * out * n >= (1LL << 17))
  for (int ot = 0; ot < o_tiles; ++ot) {
    const int o0 = ot * kTileO;
    const int no = std::min(kTileO, out - o0);
    const float* wr[kTileO];
    for (int b = 0; b < no; ++b) wr[b] = w.data() + static_cast<std::ptrdiff_t>(o0 + b) * n;
    for (int t0 = 0; t0 < T; t0 += kTileT) {
      const int nt = std::min(kTileT, T - t0);
      const float* xr[kTileT];
      for (int a = 0; a < nt; ++a) xr[a] = x.data() + static_cast<std::ptrdiff_t>(t0 + a) * n;
      tile(xr, nt, wr, no, n, bias.size() ? bias.data() + o0 : nullptr, y.data() + static_cast<std::ptrdiff_t>(t0) * out + o0, out);
    }
  }
  return y;
}

// The target / draft LM: the reference's forward with every linear layer on blocked_linear.
class ExampleModel final : public specdec::LanguageModel {
 public:
  ExampleModel(specdec::ModelConfig config, specdec::LlamaWeights weights) : ref_(std::move(config), std::move(weights)) {}

  const specdec::ModelConfig& config() const override { return ref_.config(); }
  std::unique_ptr<specdec::KVCache> new_cache(int capacity) const override { return ref_.new_cache(capacity); }

  specdec::ForwardResult forward(specdec::KVCache& cache_base, const specdec::ForwardRequest& request) const override {
    auto* cache = dynamic_cast<specdec::DenseKVCache*>(&cache_base);
    if (!cache) throw specdec::Error("example plugin: the KV cache was not created by this model's new_cache");
    const specdec::ModelConfig& c = config();
    const specdec::LlamaWeights& W = ref_.weights();
    const int T = static_cast<int>(request.tokens.size());
    const int H = c.hidden_size, L = c.num_hidden_layers;
    specdec::check_forward_request(c, request);
    std::optional<specdec::AttentionMask> mask_storage;
    const specdec::TokenBlock block = specdec::make_token_block(request, ref_.rope(), cache->length(), mask_storage);

    Matrix x(T, H);
    for (int t = 0; t < T; ++t) x.row(t) = W.embed_tokens.row(request.tokens[t]);
    cache->append(T, block.positions.data());

    specdec::ForwardResult result;
    const int n_aux = static_cast<int>(request.aux_layers.size());
    if (n_aux) result.aux_hidden.resize(T, static_cast<Eigen::Index>(n_aux) * H);
    auto record_aux = [&](int index, const Matrix& state) {
      for (int a = 0; a < n_aux; ++a)
        if (request.aux_layers[a] == index) result.aux_hidden.middleCols(static_cast<Eigen::Index>(a) * H, H) = state;
    };
    for (int l = 0; l < L; ++l) {
      record_aux(l, x);
      const specdec::LayerWeights& w = W.layers[l];
      Matrix h = x + attention(w, specdec::ops::rms_norm(x, w.input_layernorm, c.rms_norm_eps), *cache, l, block);
      const Matrix n2 = specdec::ops::rms_norm(h, w.post_attention_layernorm, c.rms_norm_eps);
      const Matrix act = specdec::ops::swiglu(blocked_linear(n2, w.gate_proj, w.gate_bias), blocked_linear(n2, w.up_proj, w.up_bias));
      x = h + blocked_linear(act, w.down_proj, w.down_bias);
    }
    Matrix h = specdec::ops::rms_norm(x, W.norm, c.rms_norm_eps);
    record_aux(L, h);
    if (!request.logit_rows.empty()) {
      Matrix rows(static_cast<Eigen::Index>(request.logit_rows.size()), H);
      for (std::size_t i = 0; i < request.logit_rows.size(); ++i) rows.row(static_cast<Eigen::Index>(i)) = h.row(request.logit_rows[i]);
      result.logits = blocked_linear(rows, W.output_head());
    }
    specdec::apply_argmax_only(request, result);
    if (request.final_hidden) result.final_hidden = std::move(h);
    return result;
  }

 private:
  // The reference's self_attention (reference/model/decoder_layer.cpp) with the projections on
  // blocked_linear; one head's attention is the reference's attend.
  Matrix attention(const specdec::LayerWeights& w, const Matrix& in, specdec::DenseKVCache& cache, int layer,
                   const specdec::TokenBlock& block) const {
    const specdec::ModelConfig& c = config();
    const int T = static_cast<int>(in.rows());
    const int nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
    const int group = nh / nkv;
    Matrix q = blocked_linear(in, w.q_proj, w.q_bias);
    Matrix k = blocked_linear(in, w.k_proj, w.k_bias);
    Matrix v = blocked_linear(in, w.v_proj, w.v_bias);
    for (int t = 0; t < T; ++t) {
      if (w.q_norm.size()) {
        for (int h = 0; h < nh; ++h) specdec::ops::rms_norm_inplace(q.row(t).data() + h * hd, w.q_norm.data(), hd, c.rms_norm_eps);
        for (int h = 0; h < nkv; ++h) specdec::ops::rms_norm_inplace(k.row(t).data() + h * hd, w.k_norm.data(), hd, c.rms_norm_eps);
      }
      ref_.rope().apply(q.row(t).data(), nh, block.angles[t]);
      ref_.rope().apply(k.row(t).data(), nkv, block.angles[t]);
    }
    Matrix& K = cache.keys(layer);
    Matrix& V = cache.values(layer);
    K.middleRows(block.first_slot, T) = k;
    V.middleRows(block.first_slot, T) = v;
    const int cols = block.first_slot + T;
    const int window = c.layer_sliding_window(layer);
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    Matrix out = Matrix::Zero(T, nh * hd);
    for (int t = 0; t < T; ++t) {
      for (int h = 0; h < nh; ++h) {
        const int g = h / group;
        std::vector<const float*> keys, values;
        for (int j = 0; j < cols; ++j) {
          if (!block.mask->allowed(t, j)) continue;
          if (window > 0 && block.positions[t] - cache.position(j) >= window) continue;
          keys.push_back(K.row(j).data() + g * hd);
          values.push_back(V.row(j).data() + g * hd);
        }
        specdec::attend(q.row(t).data() + h * hd, keys.data(), values.data(), static_cast<int>(keys.size()), hd, scale,
                        out.row(t).data() + h * hd);
      }
    }
    return blocked_linear(out, w.o_proj, w.o_bias);
  }

  specdec::Transformer ref_;  // config and weights checked, RoPE tables, cache layout
};

std::unique_ptr<specdec::LanguageModel> load_model(const std::filesystem::path& checkpoint) {
  specdec::LlamaModel m = specdec::load_llama_checkpoint(checkpoint);
  return std::make_unique<ExampleModel>(std::move(m.config), std::move(m.weights));
}

std::unique_ptr<specdec::LanguageModel> make_model(const specdec::ModelConfig& config, const specdec::LlamaWeights& weights,
                                                   specdec::Dtype precision) {
  // Computes in fp32 from the weights rounded to the precision asked for (as the cpu backend
  // stores them).
  return std::make_unique<ExampleModel>(config, specdec::round_weights(weights, precision));
}

}  // namespace example

#if EXAMPLE_PLUGIN_DROP_LANE
SPECDEC_PLUGIN_ENTRY("example-wrong", "blocked fp32 linear layers, deliberately missing one partial sum", &example::load_model,
                     &example::make_model, nullptr, nullptr)
#else
SPECDEC_PLUGIN_ENTRY("example", "blocked fp32 linear layers (hand-written), the reference's other ops", &example::load_model,
                     &example::make_model, nullptr, nullptr)
#endif
