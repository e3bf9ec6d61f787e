#include "optimized/cpu/cpu_eagle_head.hpp"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "optimized/cpu/cpu_decoder_layer.hpp"
#include "optimized/cpu/cpu_kv_cache.hpp"
#include "optimized/cpu/fused_linear.hpp"
#include "optimized/cpu/packed_matrix.hpp"
#include "reference/core/error.hpp"
#include "reference/model/precision.hpp"

namespace specdec::cpu {

namespace {

PackedMatrix pack_exact(const Matrix& m, const std::string& name) {
  const Matrix* one[] = {&m};
  return PackedMatrix(m, lossless_precision(one), name);
}

class CpuEagleEngine final : public EagleHeadEngine {
 public:
  explicit CpuEagleEngine(const EagleHead& head);

  std::string name() const override { return "cpu"; }
  std::unique_ptr<KVCache> new_cache(int capacity) const override {
    return std::make_unique<CpuKVCache>(config_.num_layers, config_.layer.kv_dim(), capacity);
  }
  EagleHead::Output forward(KVCache& cache, const EagleHead::Input& in) const override;

 private:
  EagleHeadConfig config_;
  Rope rope_;
  const Matrix* embed_;             // [V, H] fp32: the head's table or the target's
  PackedMatrix fc;                  // [H, fc_in]
  std::vector<float> fc_bias;       // (H) or empty
  std::vector<float> hidden_norm;   // (H); empty for EAGLE-1
  std::vector<PackedLayer> layers;  // num_layers; layer 0 of EAGLE-3 / P-EAGLE reads 2H
  std::vector<float> norm;          // (H); empty for EAGLE-1
  PackedMatrix output_head;         // [Vd, H]
};

CpuEagleEngine::CpuEagleEngine(const EagleHead& head)
    : config_(head.config()), rope_(head.rope()), embed_(&head.embeddings()) {
  const EagleWeights& w = head.weights();
  fc = pack_exact(w.fc, "fc.weight");
  fc_bias = to_vector(w.fc_bias);
  hidden_norm = to_vector(w.hidden_norm);
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& lw = w.layers[l];
    layers.push_back(pack_layer(lw, lossless_precision(layer_matrices(lw)), "layers." + std::to_string(l) + "."));
  }
  norm = to_vector(w.norm);
  output_head = pack_exact(head.output_head(), config_.kind == EagleKind::eagle1 ? "the target's lm_head" : "lm_head.weight");
}

EagleHead::Output CpuEagleEngine::forward(KVCache& cache_base, const EagleHead::Input& in) const {
  const EagleHeadConfig& c = config_;
  const ModelConfig& lc = c.layer;
  auto* cache = dynamic_cast<CpuKVCache*>(&cache_base);
  if (!cache) {
    throw Error("eagle head forward: the KV cache was not created by the cpu backend (use new_cache of the head bound to it)");
  }
  check_head_cache(c, cache->layers(), cache->kv_dim());
  const int T = static_cast<int>(in.tokens.size());
  const int H = lc.hidden_size;
  const int F = static_cast<int>(in.features.cols());  // fc_in, or H when every row is projected
  std::optional<AttentionMask> mask_storage;
  const TokenBlock block = head_token_block(in, rope_, cache->length(), mask_storage);
  cache->append(T, block.positions.data());  // every check is done: only now touch the cache

  const auto row_of = [](std::vector<float>& m, int t, int width) { return m.data() + static_cast<std::size_t>(t) * width; };
  std::vector<float> e(static_cast<std::size_t>(T) * H);  // e: (T, H) token embeddings
  for (int t = 0; t < T; ++t) std::memcpy(row_of(e, t, H), embed_->row(in.tokens[static_cast<std::size_t>(t)]).data(), sizeof(float) * H);

  std::vector<int> all_rows(static_cast<std::size_t>(T));
  for (int t = 0; t < T; ++t) all_rows[static_cast<std::size_t>(t)] = t;
  LayerScratch scratch;
  std::vector<float> x(static_cast<std::size_t>(T) * H);  // x: (T, H) residual stream
  const PackedLayer& l0 = layers.front();
  if (c.kind == EagleKind::eagle1) {
    std::vector<float> cat(static_cast<std::size_t>(T) * (H + F));  // (T, H + Ht) = [embed | feature]
    for (int t = 0; t < T; ++t) {
      std::memcpy(row_of(cat, t, H + F), row_of(e, t, H), sizeof(float) * H);
      std::memcpy(row_of(cat, t, H + F) + H, in.features.row(t).data(), sizeof(float) * F);
    }
    linear(fc, or_null(fc_bias), cat.data(), H + F, T, x.data(), H, false);
    const std::vector<float> attn_in = x;  // no input norm: the layer attends over x itself
    decoder_layer(l0, lc, rope_, attn_in.data(), *cache, 0, block, all_rows, x.data(), scratch);
  } else {
    std::vector<float> h(static_cast<std::size_t>(T) * H);  // h: (T, H) fused (or fed-back) hidden state
    std::vector<int> fused;
    for (int t = 0; t < T; ++t) {
      if (in.is_projected(t)) {
        std::memcpy(row_of(h, t, H), in.features.row(t).data(), sizeof(float) * H);
      } else {
        fused.push_back(t);
      }
    }
    if (!fused.empty()) {
      const int n = static_cast<int>(fused.size());
      std::vector<float> aux(static_cast<std::size_t>(n) * F), out(static_cast<std::size_t>(n) * H);  // (n, F), (n, H)
      for (int i = 0; i < n; ++i) std::memcpy(row_of(aux, i, F), in.features.row(fused[static_cast<std::size_t>(i)]).data(), sizeof(float) * F);
      linear(fc, or_null(fc_bias), aux.data(), F, n, out.data(), H, false);
      for (int i = 0; i < n; ++i) std::memcpy(row_of(h, fused[static_cast<std::size_t>(i)], H), row_of(out, i, H), sizeof(float) * H);
    }
    std::vector<float> hn(h.size());
    rms_norm_rows(h.data(), hn.data(), T, H, hidden_norm, lc.rms_norm_eps);
    std::vector<float> en(e.size());
    rms_norm_rows(e.data(), en.data(), T, H, l0.input_norm, lc.rms_norm_eps);
    std::vector<float> attn_in(static_cast<std::size_t>(T) * 2 * H);  // (T, 2H) = [input_norm(embed) | hidden_norm(h)]
    for (int t = 0; t < T; ++t) {
      std::memcpy(row_of(attn_in, t, 2 * H), row_of(en, t, H), sizeof(float) * H);
      std::memcpy(row_of(attn_in, t, 2 * H) + H, row_of(hn, t, H), sizeof(float) * H);
    }
    x = c.norm_before_residual ? hn : h;
    decoder_layer(l0, lc, rope_, attn_in.data(), *cache, 0, block, all_rows, x.data(), scratch);
  }
  std::vector<float> xn(x.size());
  for (int l = 1; l < c.num_layers; ++l) {
    const PackedLayer& w = layers[static_cast<std::size_t>(l)];
    rms_norm_rows(x.data(), xn.data(), T, H, w.input_norm, lc.rms_norm_eps);
    decoder_layer(w, lc, rope_, xn.data(), *cache, l, block, all_rows, x.data(), scratch);
  }

  EagleHead::Output result;
  if (!in.logit_rows.empty()) {
    const int R = static_cast<int>(in.logit_rows.size());
    std::vector<float> rows(static_cast<std::size_t>(R) * H);  // (R, H)
    for (int i = 0; i < R; ++i) std::memcpy(row_of(rows, i, H), row_of(x, in.logit_rows[static_cast<std::size_t>(i)], H), sizeof(float) * H);
    // EAGLE-1 feeds the layer output straight into the target's LM head; the others normalise.
    if (c.kind != EagleKind::eagle1) {
      std::vector<float> normed(rows.size());
      rms_norm_rows(rows.data(), normed.data(), R, H, norm, lc.rms_norm_eps);
      rows.swap(normed);
    }
    result.logits.resize(R, output_head.rows());
    linear(output_head, nullptr, rows.data(), H, R, result.logits.data(), output_head.rows(), false);  // (R, Vd)
  }
  result.hidden.resize(T, H);
  std::memcpy(result.hidden.data(), x.data(), sizeof(float) * x.size());
  return result;
}

}  // namespace

EagleHead cpu_eagle_head(const EagleHead& head) { return head.with_engine(std::make_shared<const CpuEagleEngine>(head)); }

}  // namespace specdec::cpu
