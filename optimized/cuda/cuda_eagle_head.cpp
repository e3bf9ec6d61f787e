#include "optimized/cuda/cuda_eagle_head.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "optimized/cuda/cuda_decoder_layer.hpp"
#include "optimized/cuda/cuda_kv_cache.hpp"
#include "optimized/cuda/device_ops.hpp"
#include "optimized/cuda/device_weights.hpp"
#include "reference/core/error.hpp"
#include "reference/model/precision.hpp"

namespace specdec::cuda {

namespace {

DeviceMatrix upload_exact(DeviceRuntime& rt, const Matrix& m, const std::string& name) {
  const Matrix* one[] = {&m};
  return upload_matrix(rt, m, lossless_precision(one), name);
}

class CudaEagleEngine final : public EagleHeadEngine {
 public:
  CudaEagleEngine(std::shared_ptr<DeviceRuntime> rt, const EagleHead& head);

  std::string name() const override { return "cuda"; }
  std::unique_ptr<KVCache> new_cache(int capacity) const override {
    return std::make_unique<CudaKVCache>(*rt_, config_.num_layers, config_.layer.kv_dim(), capacity);
  }
  EagleHead::Output forward(KVCache& cache, const EagleHead::Input& in) const override;

 private:
  std::shared_ptr<DeviceRuntime> rt_;
  EagleHeadConfig config_;
  Rope rope_;
  const Matrix* embed_;  // [V, H] fp32 on the host: the head's table or the target's
  DeviceMatrix fc;       // [H, fc_in]
  DeviceBuffer<float> fc_bias, hidden_norm, norm;
  std::vector<DeviceLayer> layers;  // layer 0 of EAGLE-3 / P-EAGLE reads 2H
  DeviceMatrix output_head;         // [Vd, H]

  // Per-forward scratch (forward is const but not reentrant).
  mutable LayerScratch scratch;
  mutable DeviceBuffer<int32_t> index;
  mutable DeviceBuffer<float> fc_in, staged, h, attn_in, x, xn, picked, normed, logits;
};

CudaEagleEngine::CudaEagleEngine(std::shared_ptr<DeviceRuntime> rt, const EagleHead& head)
    : rt_(std::move(rt)), config_(head.config()), rope_(head.rope()), embed_(&head.embeddings()) {
  DeviceRuntime& r = *rt_;
  const EagleWeights& w = head.weights();
  fc = upload_exact(r, w.fc, "fc.weight");
  fc_bias = upload_vector(r, w.fc_bias);
  hidden_norm = upload_vector(r, w.hidden_norm);
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& lw = w.layers[l];
    layers.push_back(upload_layer(r, lw, lossless_precision(layer_matrices(lw)), "layers." + std::to_string(l) + "."));
  }
  norm = upload_vector(r, w.norm);
  output_head = upload_exact(r, head.output_head(), config_.kind == EagleKind::eagle1 ? "the target's lm_head" : "lm_head.weight");
}

EagleHead::Output CudaEagleEngine::forward(KVCache& cache_base, const EagleHead::Input& in) const {
  DeviceRuntime& rt = *rt_;
  const EagleHeadConfig& c = config_;
  const ModelConfig& lc = c.layer;
  auto* cache = dynamic_cast<CudaKVCache*>(&cache_base);
  if (!cache) {
    throw Error("eagle head forward: the KV cache was not created by the cuda backend (use new_cache of the head bound to it)");
  }
  if (&cache->runtime() != &rt) throw Error("eagle head forward: the KV cache lives on another device runtime");
  check_head_cache(c, cache->layers(), cache->kv_dim());
  const int T = static_cast<int>(in.tokens.size());
  const std::size_t uT = static_cast<std::size_t>(T);
  const int H = lc.hidden_size;
  const int F = static_cast<int>(in.features.cols());  // fc_in, or H when every row is projected
  std::optional<AttentionMask> mask_storage;
  TokenBlock block = head_token_block(in, rope_, cache->length(), mask_storage);
  block.first_slot = cache->append(T, block.positions.data());  // every check is done: only now touch the cache
  const DeviceTokenBlock b = upload_token_block(rt, block, *cache, lc.head_dim, scratch);

  float* x = grown(rt, this->x, uT * H);  // x: (T, H) residual stream
  const DeviceLayer& l0 = layers.front();
  if (c.kind == EagleKind::eagle1) {
    // fc over cat(embed(token), feature): (T, H + Ht), assembled on the host.
    std::vector<float> cat(uT * (H + F));
    for (int t = 0; t < T; ++t) {
      float* row = cat.data() + static_cast<std::size_t>(t) * (H + F);
      std::copy_n(embed_->row(in.tokens[static_cast<std::size_t>(t)]).data(), H, row);
      std::copy_n(in.features.row(t).data(), F, row + H);
    }
    float* d_cat = grown(rt, fc_in, cat.size());
    rt.copy_to_device(d_cat, cat.data(), sizeof(float) * cat.size());
    linear(rt, {{&fc, or_null(fc_bias), x, H}}, d_cat, H + F, T, H + F);
    float* a = grown(rt, attn_in, uT * H);  // no input norm: the layer attends over x itself
    rt.copy_on_device(a, x, sizeof(float) * uT * H);
    decoder_layer(rt, l0, lc, 0, a, H, *cache, b, x, scratch);
  } else {
    // h: (T, H), each row fc(aux) or the fed-back hidden state given. The n fused rows go through
    // fc together; the staged block holds [fc outputs (n) | embeddings (T) | projected rows], and
    // one gather puts every h row in place.
    std::vector<int> fused, given;
    for (int t = 0; t < T; ++t) (in.is_projected(t) ? given : fused).push_back(t);
    const int n = static_cast<int>(fused.size()), g = static_cast<int>(given.size());
    std::vector<float> host((uT + g) * H);  // embeddings, then the projected rows
    for (int t = 0; t < T; ++t) std::copy_n(embed_->row(in.tokens[static_cast<std::size_t>(t)]).data(), H, host.data() + static_cast<std::size_t>(t) * H);
    for (int i = 0; i < g; ++i) std::copy_n(in.features.row(given[static_cast<std::size_t>(i)]).data(), H, host.data() + (uT + i) * H);
    float* st = grown(rt, staged, (static_cast<std::size_t>(n) + uT + g) * H);
    rt.copy_to_device(st + static_cast<std::size_t>(n) * H, host.data(), sizeof(float) * host.size());
    if (n > 0) {
      std::vector<float> aux(static_cast<std::size_t>(n) * F);  // (n, F)
      for (int i = 0; i < n; ++i) std::copy_n(in.features.row(fused[static_cast<std::size_t>(i)]).data(), F, aux.data() + static_cast<std::size_t>(i) * F);
      float* d_aux = grown(rt, fc_in, aux.size());
      rt.copy_to_device(d_aux, aux.data(), sizeof(float) * aux.size());
      linear(rt, {{&fc, or_null(fc_bias), st, H}}, d_aux, F, n, F);
    }
    std::vector<int32_t> source(uT);  // h row t = staged row source[t]
    for (int i = 0; i < n; ++i) source[static_cast<std::size_t>(fused[static_cast<std::size_t>(i)])] = i;
    for (int i = 0; i < g; ++i) source[static_cast<std::size_t>(given[static_cast<std::size_t>(i)])] = n + T + i;
    int32_t* src = grown(rt, index, uT);
    rt.copy_to_device(src, source.data(), sizeof(int32_t) * uT);
    float* hh = grown(rt, h, uT * H);
    rt.launch(kernels::GatherRows{st, H, src, hh, H, T, H});
    // attn_in: (T, 2H) = [input_norm(embed) | hidden_norm(h)]; the residual is h or hidden_norm(h).
    float* a = grown(rt, attn_in, uT * 2 * H);
    rms_norm(rt, st + static_cast<std::size_t>(n) * H, H, l0.input_norm.get(), a, 2 * H, T, H, lc.rms_norm_eps);
    rms_norm(rt, hh, H, hidden_norm.get(), a + H, 2 * H, T, H, lc.rms_norm_eps);
    if (c.norm_before_residual) {  // hidden_norm(h), already in attn_in's right half
      rt.launch(kernels::GatherRows{a + H, 2 * H, nullptr, x, H, T, H});
    } else {
      rt.copy_on_device(x, hh, sizeof(float) * uT * H);
    }
    decoder_layer(rt, l0, lc, 0, a, 2 * H, *cache, b, x, scratch);
  }
  float* xnorm = grown(rt, xn, uT * H);
  for (int l = 1; l < c.num_layers; ++l) {
    const DeviceLayer& w = layers[static_cast<std::size_t>(l)];
    rms_norm(rt, x, H, w.input_norm.get(), xnorm, H, T, H, lc.rms_norm_eps);
    decoder_layer(rt, w, lc, l, xnorm, H, *cache, b, x, scratch);
  }

  EagleHead::Output result;
  if (!in.logit_rows.empty()) {
    const int R = static_cast<int>(in.logit_rows.size());
    const std::vector<int32_t> rows(in.logit_rows.begin(), in.logit_rows.end());
    int32_t* d_rows = grown(rt, index, rows.size());
    rt.copy_to_device(d_rows, rows.data(), sizeof(int32_t) * rows.size());
    float* p = grown(rt, picked, static_cast<std::size_t>(R) * H);  // (R, H)
    rt.launch(kernels::GatherRows{x, H, d_rows, p, H, R, H});
    // EAGLE-1 feeds the layer output straight into the target's LM head; the others normalise.
    if (c.kind != EagleKind::eagle1) {
      float* nr = grown(rt, normed, static_cast<std::size_t>(R) * H);
      rms_norm(rt, p, H, norm.get(), nr, H, R, H, lc.rms_norm_eps);
      p = nr;
    }
    const int Vd = output_head.rows;
    float* lg = grown(rt, logits, static_cast<std::size_t>(R) * Vd);  // (R, Vd)
    linear(rt, {{&output_head, nullptr, lg, Vd}}, p, H, R, H);
    result.logits.resize(R, Vd);
    rt.copy_to_host(result.logits.data(), lg, sizeof(float) * static_cast<std::size_t>(R) * Vd);
  }
  result.hidden.resize(T, H);
  rt.copy_to_host(result.hidden.data(), x, sizeof(float) * uT * H);
  rt.synchronize();
  return result;
}

}  // namespace

EagleHead cuda_eagle_head(std::shared_ptr<DeviceRuntime> runtime, const EagleHead& head) {
  if (!runtime) throw Error("cuda backend: no device runtime given");
  return head.with_engine(std::make_shared<const CudaEagleEngine>(std::move(runtime), head));
}

}  // namespace specdec::cuda
