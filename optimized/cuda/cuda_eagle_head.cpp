#include "optimized/cuda/cuda_eagle_head.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
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
  // Every entry in one pass: fc, each layer and the LM head read their weights once for the rows
  // of all entries; each row attends over its own entry's cache.
  std::vector<EagleHead::Output> forward_batch(const std::vector<EagleHead::BatchEntry>& batch) const override;

 private:
  // forward is a batch of one whose messages carry no entry index.
  std::vector<EagleHead::Output> run(const std::vector<EagleHead::BatchEntry>& batch, bool batched) const;

  std::shared_ptr<DeviceRuntime> rt_;
  EagleHeadConfig config_;
  Rope rope_;
  const Matrix* embed_;  // [V, H] fp32 on the host: the head's table or the target's
  DeviceMatrix fc;       // [H, fc_in]
  DeviceBuffer<float> fc_bias, hidden_norm, embed_norm, norm;
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
  embed_norm = upload_vector(r, w.embed_norm);
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& lw = w.layers[l];
    layers.push_back(upload_layer(r, lw, lossless_precision(layer_matrices(lw)), "layers." + std::to_string(l) + "."));
  }
  norm = upload_vector(r, w.norm);
  output_head = upload_exact(r, head.output_head(), head.shares_target_head() ? "the target's lm_head" : "lm_head.weight");
}

EagleHead::Output CudaEagleEngine::forward(KVCache& cache, const EagleHead::Input& in) const {
  return std::move(run({EagleHead::BatchEntry{&cache, &in}}, false).front());
}

std::vector<EagleHead::Output> CudaEagleEngine::forward_batch(const std::vector<EagleHead::BatchEntry>& batch) const {
  return run(batch, true);
}

std::vector<EagleHead::Output> CudaEagleEngine::run(const std::vector<EagleHead::BatchEntry>& batch, bool batched) const {
  DeviceRuntime& rt = *rt_;
  const EagleHeadConfig& c = config_;
  const ModelConfig& lc = c.layer;
  const std::size_t N = batch.size();
  if (N == 0) return {};
  const int H = lc.hidden_size;

  // Every entry's checks before any cache is touched (EagleHead checked the inputs themselves).
  std::vector<CudaKVCache*> caches(N);
  std::vector<std::optional<AttentionMask>> mask_storage(N);  // sized once: blocks point into it
  std::vector<TokenBlock> blocks(N);
  for (std::size_t i = 0; i < N; ++i) {
    const EagleHead::Input& in = *batch[i].input;
    try {
      auto* cache = dynamic_cast<CudaKVCache*>(batch[i].cache);
      if (!cache) {
        throw Error("eagle head forward: the KV cache was not created by the cuda backend (use new_cache of the head bound to it)");
      }
      if (&cache->runtime() != &rt) throw Error("eagle head forward: the KV cache lives on another device runtime");
      check_head_cache(c, cache->layers(), cache->kv_dim());
      blocks[i] = head_token_block(in, rope_, cache->length(), mask_storage[i]);
      cache->check_append(static_cast<int>(in.tokens.size()));
      caches[i] = cache;
    } catch (const Error& e) {
      if (!batched) throw;
      throw Error("eagle head forward_batch: entry " + std::to_string(i) + ": " + e.what());
    }
  }
  // Entry i's rows are rows [row0[i], row0[i] + T_i) of the stacked activations.
  std::vector<int> row0(N);
  int T = 0;
  for (std::size_t i = 0; i < N; ++i) {
    const int Ti = static_cast<int>(batch[i].input->tokens.size());
    row0[i] = T;
    T += Ti;
    blocks[i].first_slot = caches[i]->append(Ti, blocks[i].positions.data());
  }
  const std::size_t uT = static_cast<std::size_t>(T);
  const DeviceTokenBlock b = upload_token_blocks(rt, blocks, caches, lc.num_attention_heads, lc.head_dim, scratch);
  // Row r of the batch is row row_of[r].second of input row_of[r].first.
  std::vector<std::pair<const EagleHead::Input*, int>> row_of;
  for (std::size_t i = 0; i < N; ++i)
    for (int t = 0; t < static_cast<int>(batch[i].input->tokens.size()); ++t) row_of.emplace_back(batch[i].input, t);
  // Row r's position (for MTP's zero embedding at position 0).
  std::vector<int32_t> position_of;
  for (std::size_t i = 0; i < N; ++i) position_of.insert(position_of.end(), blocks[i].positions.begin(), blocks[i].positions.end());
  static const std::vector<float> no_embedding(static_cast<std::size_t>(H), 0.0f);
  auto embedding_of = [&](int r) {
    const auto& [in, t] = row_of[static_cast<std::size_t>(r)];
    if (in->zero_embedding_at_position_0 && position_of[static_cast<std::size_t>(r)] == 0) return no_embedding.data();
    return embed_->row(in->tokens[static_cast<std::size_t>(t)]).data();
  };
  auto features_of = [&](int r) {
    const auto& [in, t] = row_of[static_cast<std::size_t>(r)];
    return in->features.row(t).data();
  };

  float* x = grown(rt, this->x, uT * H);  // x: (T, H) residual stream, every entry's rows
  const DeviceLayer& l0 = layers.front();
  const int Fw = c.feature_width();  // every row through fc has this many features
  int first_standard_layer = 1;     // layers from here on take the standard pre-norm input
  if (c.kind == EagleKind::mtp) {
    // staged: [embeddings (T) | features (T)], each (T, H); cat: (T, 2H) = [enorm(e) | hnorm(h)]
    // (MiMo: [hnorm(h) | enorm(e)]), then fc without bias.
    std::vector<float> host(2 * uT * H);
    for (int r = 0; r < T; ++r) {
      std::copy_n(embedding_of(r), H, host.data() + static_cast<std::size_t>(r) * H);
      std::copy_n(features_of(r), H, host.data() + (uT + r) * H);
    }
    float* st = grown(rt, staged, host.size());
    rt.copy_to_device(st, host.data(), sizeof(float) * host.size());
    float* a = grown(rt, attn_in, uT * 2 * H);
    rms_norm(rt, st, H, embed_norm.get(), a + (c.hidden_first ? H : 0), 2 * H, T, H, lc.rms_norm_eps);
    rms_norm(rt, st + uT * H, H, hidden_norm.get(), a + (c.hidden_first ? 0 : H), 2 * H, T, H, lc.rms_norm_eps);
    linear(rt, {{&fc, nullptr, x, H}}, a, 2 * H, T, 2 * H);
    first_standard_layer = 0;
  } else if (c.kind == EagleKind::eagle1) {
    // fc over cat(embed(token), feature): (T, H + Ht), assembled on the host.
    std::vector<float> cat(uT * (H + Fw));
    for (int r = 0; r < T; ++r) {
      float* row = cat.data() + static_cast<std::size_t>(r) * (H + Fw);
      std::copy_n(embedding_of(r), H, row);
      std::copy_n(features_of(r), Fw, row + H);
    }
    float* d_cat = grown(rt, fc_in, cat.size());
    rt.copy_to_device(d_cat, cat.data(), sizeof(float) * cat.size());
    linear(rt, {{&fc, or_null(fc_bias), x, H}}, d_cat, H + Fw, T, H + Fw);
    float* a = grown(rt, attn_in, uT * H);  // no input norm: the layer attends over x itself
    rt.copy_on_device(a, x, sizeof(float) * uT * H);
    decoder_layer(rt, l0, lc, 0, a, H, b, x, scratch);
  } else {
    // h: (T, H), each row fc(aux) or the fed-back hidden state given. The n fused rows of every
    // entry go through fc together; the staged block holds [fc outputs (n) | embeddings (T) |
    // projected rows (g)], and one gather puts every h row in place.
    std::vector<int> fused, given;
    for (int r = 0; r < T; ++r) {
      const auto& [in, t] = row_of[static_cast<std::size_t>(r)];
      (in->is_projected(t) ? given : fused).push_back(r);
    }
    const int n = static_cast<int>(fused.size()), g = static_cast<int>(given.size());
    std::vector<float> host((uT + g) * H);  // embeddings, then the projected rows
    std::vector<float> aux(static_cast<std::size_t>(n) * Fw);  // (n, Fw)
    for (int r = 0; r < T; ++r) std::copy_n(embedding_of(r), H, host.data() + static_cast<std::size_t>(r) * H);
    for (int i = 0; i < g; ++i) std::copy_n(features_of(given[static_cast<std::size_t>(i)]), H, host.data() + (uT + i) * H);
    for (int i = 0; i < n; ++i) std::copy_n(features_of(fused[static_cast<std::size_t>(i)]), Fw, aux.data() + static_cast<std::size_t>(i) * Fw);
    float* st = grown(rt, staged, (static_cast<std::size_t>(n) + uT + g) * H);
    rt.copy_to_device(st + static_cast<std::size_t>(n) * H, host.data(), sizeof(float) * host.size());
    if (n > 0) {
      float* d_aux = grown(rt, fc_in, aux.size());
      rt.copy_to_device(d_aux, aux.data(), sizeof(float) * aux.size());
      linear(rt, {{&fc, or_null(fc_bias), st, H}}, d_aux, Fw, n, Fw);
    }
    std::vector<int32_t> source(uT);  // h row r = staged row source[r]
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
    decoder_layer(rt, l0, lc, 0, a, 2 * H, b, x, scratch);
  }
  float* xnorm = grown(rt, xn, uT * H);
  for (int l = first_standard_layer; l < c.num_layers; ++l) {
    const DeviceLayer& w = layers[static_cast<std::size_t>(l)];
    rms_norm(rt, x, H, w.input_norm.get(), xnorm, H, T, H, lc.rms_norm_eps);
    decoder_layer(rt, w, lc, l, xnorm, H, b, x, scratch);
  }

  std::vector<EagleHead::Output> results(N);
  // Every entry's logit rows through the (norm and) LM head at once.
  std::vector<int32_t> rows;
  std::vector<int> at(N);
  for (std::size_t i = 0; i < N; ++i) {
    at[i] = static_cast<int>(rows.size());
    for (const int r : batch[i].input->logit_rows) rows.push_back(row0[i] + r);
  }
  const int R = static_cast<int>(rows.size());
  const int Vd = output_head.rows;
  float* lg = nullptr;
  if (R > 0) {
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
    lg = grown(rt, logits, static_cast<std::size_t>(R) * Vd);  // (R, Vd)
    linear(rt, {{&output_head, nullptr, lg, Vd}}, p, H, R, H);
  }
  for (std::size_t i = 0; i < N; ++i) {
    const EagleHead::Input& in = *batch[i].input;
    const int Ri = static_cast<int>(in.logit_rows.size()), Ti = static_cast<int>(in.tokens.size());
    if (Ri > 0) {
      results[i].logits.resize(Ri, Vd);
      rt.copy_to_host(results[i].logits.data(), lg + static_cast<std::size_t>(at[i]) * Vd,
                      sizeof(float) * static_cast<std::size_t>(Ri) * Vd);
    }
    results[i].hidden.resize(Ti, H);
    rt.copy_to_host(results[i].hidden.data(), x + static_cast<std::size_t>(row0[i]) * H, sizeof(float) * static_cast<std::size_t>(Ti) * H);
  }
  rt.synchronize();
  return results;
}

}  // namespace

EagleHead cuda_eagle_head(std::shared_ptr<DeviceRuntime> runtime, const EagleHead& head) {
  if (!runtime) throw Error("cuda backend: no device runtime given");
  head.require_weights("cuda_eagle_head");
  return head.with_engine(std::make_shared<const CudaEagleEngine>(std::move(runtime), head));
}

}  // namespace specdec::cuda
