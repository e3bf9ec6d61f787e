#include "optimized/cpu/cpu_eagle_head.hpp"

#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "optimized/cpu/cpu_decoder_layer.hpp"
#include "optimized/cpu/cpu_isa.hpp"
#include "optimized/cpu/cpu_kv_cache.hpp"
#include "optimized/cpu/cpu_transformer.hpp"
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
  // Packs the head's matrices: `owned` (handed over by release_weights; each matrix is freed once
  // packed, so the head's fp32 and packed copies are never both whole) or, when null, the head's
  // own weights, which it keeps. The token embeddings and a shared LM head (EAGLE-1, an MTP module
  // without its own) are `target`'s packed tensors when given, else head.target()'s fp32 ones.
  CpuEagleEngine(const EagleHead& head, EagleWeights* owned, const CpuTransformer* target);

  std::string name() const override { return "cpu"; }
  std::unique_ptr<KVCache> new_cache(int capacity) const override {
    return std::make_unique<CpuKVCache>(config_.num_layers, config_.layer.kv_dim(), capacity);
  }
  EagleHead::Output forward(KVCache& cache, const EagleHead::Input& in) const override;
  // Every entry in one pass per layer (fc, each layer's linears and the output head read once for
  // the rows of all entries), attention per entry on its own cache; forward is this with one entry.
  std::vector<EagleHead::Output> forward_batch(const std::vector<EagleHead::BatchEntry>& batch) const override;

 private:
  // One sequence of a forward, checked and ready to compute. Built in place and never moved:
  // block.mask may point into mask_storage.
  struct Entry {
    CpuKVCache* cache = nullptr;
    const EagleHead::Input* in = nullptr;
    std::optional<AttentionMask> mask_storage;
    TokenBlock block;
  };
  // The engine's checks of forward (the cache; EagleHead checked the input); touches no cache.
  void prepare(KVCache& cache, const EagleHead::Input& in, Entry& e) const;
  // Appends every entry to its cache and computes them together, each weight read once.
  std::vector<EagleHead::Output> run(std::vector<Entry>& entries) const;
  // Token `t`'s embedding row (H) into out.
  void embedding_row(int32_t t, float* out) const;

  EagleHeadConfig config_;
  Rope rope_;
  const PackedMatrix* embed_ = nullptr;  // [V, H]: own_embed_ or the target backend's, else
  const Matrix* embed_fp32_ = nullptr;   // [V, H]: the target's fp32 table
  PackedMatrix own_embed_;               // [V, H] when config.own_embeddings
  PackedMatrix fc;                       // [H, fc_in]
  std::vector<float> fc_bias;            // (H) or empty
  std::vector<float> hidden_norm;        // (H); empty for EAGLE-1
  std::vector<float> embed_norm;         // (H) MTP; empty for the others
  std::vector<PackedLayer> layers;       // num_layers; layer 0 of EAGLE-3 / P-EAGLE reads 2H
  std::vector<float> norm;               // (H); empty for EAGLE-1
  PackedMatrix own_output_head_;         // [Vd, H] unless the target backend's is shared
  const PackedMatrix* output_head_;      // [Vd, H]: own_output_head_ or the target backend's LM head
};

CpuEagleEngine::CpuEagleEngine(const EagleHead& head, EagleWeights* owned, const CpuTransformer* target)
    : config_(head.config()), rope_(head.rope()), output_head_(&own_output_head_) {
  const EagleHeadConfig& c = config_;
  if (target) {
    const ModelConfig& tc = target->config();
    if (tc.vocab_size != c.target_vocab || tc.hidden_size != head.target().config().hidden_size) {
      throw Error("cpu_eagle_head: the head drafts for a target of vocab " + std::to_string(c.target_vocab) +
                  " and hidden size " + std::to_string(head.target().config().hidden_size) +
                  ", the cpu target given has vocab " + std::to_string(tc.vocab_size) + " and hidden size " +
                  std::to_string(tc.hidden_size));
    }
  } else if (!head.target().has_tensors() && (!c.own_embeddings || head.shares_target_head())) {
    throw Error("cpu_eagle_head: the head's target tensors stay with the target's backend; bind it with the "
                "CpuTransformer computing the target");
  }
  // `w` is *owned (not const) whenever a matrix is freed.
  const EagleWeights& w = owned ? *owned : head.weights();
  auto release = [owned](const Matrix& m) {
    if (owned) const_cast<Matrix&>(m).resize(0, 0);
  };
  if (c.own_embeddings) {
    own_embed_ = pack_exact(w.embed_tokens, "embed_tokens.weight");
    release(w.embed_tokens);
    embed_ = &own_embed_;
  } else if (target) {
    embed_ = &target->embeddings();
  } else {
    embed_fp32_ = &head.target().embed_tokens();
  }
  fc = pack_exact(w.fc, "fc.weight");
  release(w.fc);
  fc_bias = to_vector(w.fc_bias);
  hidden_norm = to_vector(w.hidden_norm);
  embed_norm = to_vector(w.embed_norm);
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& lw = w.layers[l];
    layers.push_back(pack_layer(lw, lossless_precision(layer_matrices(lw)), "layers." + std::to_string(l) + "."));
    for (const Matrix* m : layer_matrices(lw)) release(*m);
  }
  norm = to_vector(w.norm);
  if (!head.shares_target_head()) {
    own_output_head_ = pack_exact(w.lm_head, "lm_head.weight");
    release(w.lm_head);
  } else if (target) {
    output_head_ = &target->output_head();
  } else {
    own_output_head_ = pack_exact(head.target().output_head(), "the target's lm_head");
  }
}

void CpuEagleEngine::embedding_row(int32_t t, float* out) const {
  if (embed_) {
    embed_->widen_row(t, out);
  } else {
    std::memcpy(out, embed_fp32_->row(t).data(), sizeof(float) * embed_fp32_->cols());
  }
}

void CpuEagleEngine::prepare(KVCache& cache_base, const EagleHead::Input& in, Entry& e) const {
  auto* cache = dynamic_cast<CpuKVCache*>(&cache_base);
  if (!cache) {
    throw Error("eagle head forward: the KV cache was not created by the cpu backend (use new_cache of the head bound to it)");
  }
  check_head_cache(config_, cache->layers(), cache->kv_dim());
  e.block = head_token_block(in, rope_, cache->length(), e.mask_storage);
  cache->check_append(static_cast<int>(in.tokens.size()));
  e.cache = cache;
  e.in = &in;
}

std::vector<EagleHead::Output> CpuEagleEngine::run(std::vector<Entry>& entries) const {
  const EagleHeadConfig& c = config_;
  const ModelConfig& lc = c.layer;
  const int H = lc.hidden_size;
  const std::size_t B = entries.size();
  for (Entry& e : entries) e.cache->append(static_cast<int>(e.in->tokens.size()), e.block.positions.data());

  // Entry i's tokens are rows [first[i], first[i] + T_i) of the concatenated rows.
  std::vector<int> first(B + 1, 0);
  for (std::size_t i = 0; i < B; ++i) first[i + 1] = first[i] + static_cast<int>(entries[i].in->tokens.size());
  const int N = first[B];
  const auto row_of = [](std::vector<float>& m, std::size_t t, int width) { return m.data() + t * width; };
  std::vector<float> e(static_cast<std::size_t>(N) * H);  // e: (N, H) token embeddings
  for (std::size_t i = 0; i < B; ++i) {
    const std::vector<int32_t>& tokens = entries[i].in->tokens;
    const bool zero_first = entries[i].in->zero_embedding_at_position_0;
    for (std::size_t t = 0; t < tokens.size(); ++t) {
      float* row = row_of(e, first[i] + t, H);
      if (zero_first && entries[i].block.positions[t] == 0) {
        std::fill(row, row + H, 0.0f);  // vLLM's MTP: no embedding at position 0
      } else {
        embedding_row(tokens[t], row);
      }
    }
  }

  std::vector<LayerSequence> seqs(B);  // every row of every entry, in every layer
  for (std::size_t i = 0; i < B; ++i) {
    seqs[i].cache = entries[i].cache;
    seqs[i].block = &entries[i].block;
    for (int t = 0; t < first[i + 1] - first[i]; ++t) seqs[i].rows.push_back(t);
  }
  LayerScratch scratch;
  std::vector<float> x(static_cast<std::size_t>(N) * H);  // x: (N, H) residual stream
  const PackedLayer& l0 = layers.front();
  int first_standard_layer = 1;  // layers from here on take the standard pre-norm input
  if (c.kind == EagleKind::mtp) {
    std::vector<float> hidden(static_cast<std::size_t>(N) * H);  // (N, H) features (the target's or fed back)
    for (std::size_t i = 0; i < B; ++i) {
      const Matrix& features = entries[i].in->features;
      std::memcpy(row_of(hidden, first[i], H), features.data(), sizeof(float) * features.size());
    }
    std::vector<float> en(e.size()), hn(hidden.size());
    rms_norm_rows(e.data(), en.data(), N, H, embed_norm, lc.rms_norm_eps);
    rms_norm_rows(hidden.data(), hn.data(), N, H, hidden_norm, lc.rms_norm_eps);
    std::vector<float> cat(static_cast<std::size_t>(N) * 2 * H);  // (N, 2H) = [enorm(e) | hnorm(h)], MiMo swapped
    const std::vector<float>& left = c.hidden_first ? hn : en;
    const std::vector<float>& right = c.hidden_first ? en : hn;
    for (std::size_t t = 0; t < static_cast<std::size_t>(N); ++t) {
      std::memcpy(row_of(cat, t, 2 * H), left.data() + t * H, sizeof(float) * H);
      std::memcpy(row_of(cat, t, 2 * H) + H, right.data() + t * H, sizeof(float) * H);
    }
    linear(fc, nullptr, cat.data(), 2 * H, N, x.data(), H, false);
    first_standard_layer = 0;
  } else if (c.kind == EagleKind::eagle1) {
    const int F = c.feature_width();  // EAGLE-1 has no projected rows: every row is F wide
    std::vector<float> cat(static_cast<std::size_t>(N) * (H + F));  // (N, H + Ht) = [embed | feature]
    for (std::size_t i = 0; i < B; ++i) {
      const Matrix& features = entries[i].in->features;
      for (int t = 0; t < features.rows(); ++t) {
        const std::size_t row = static_cast<std::size_t>(first[i] + t);
        std::memcpy(row_of(cat, row, H + F), row_of(e, row, H), sizeof(float) * H);
        std::memcpy(row_of(cat, row, H + F) + H, features.row(t).data(), sizeof(float) * F);
      }
    }
    linear(fc, or_null(fc_bias), cat.data(), H + F, N, x.data(), H, false);
    const std::vector<float> attn_in = x;  // no input norm: the layer attends over x itself
    decoder_layer(l0, lc, rope_, attn_in.data(), 0, seqs, x.data(), scratch);
  } else {
    const int F = c.feature_width();  // the width of every row that goes through fc
    std::vector<float> h(static_cast<std::size_t>(N) * H);  // h: (N, H) fused (or fed-back) hidden state
    std::vector<std::pair<std::size_t, const float*>> fused;  // (row, its F-wide features)
    for (std::size_t i = 0; i < B; ++i) {
      const EagleHead::Input& in = *entries[i].in;
      for (int t = 0; t < in.features.rows(); ++t) {
        const std::size_t row = static_cast<std::size_t>(first[i] + t);
        if (in.is_projected(t)) {
          std::memcpy(row_of(h, row, H), in.features.row(t).data(), sizeof(float) * H);
        } else {
          fused.emplace_back(row, in.features.row(t).data());
        }
      }
    }
    if (!fused.empty()) {
      const std::size_t n = fused.size();
      std::vector<float> aux(n * F), out(n * H);  // (n, F), (n, H)
      for (std::size_t j = 0; j < n; ++j) std::memcpy(row_of(aux, j, F), fused[j].second, sizeof(float) * F);
      linear(fc, or_null(fc_bias), aux.data(), F, static_cast<int>(n), out.data(), H, false);
      for (std::size_t j = 0; j < n; ++j) std::memcpy(row_of(h, fused[j].first, H), row_of(out, j, H), sizeof(float) * H);
    }
    std::vector<float> hn(h.size());
    rms_norm_rows(h.data(), hn.data(), N, H, hidden_norm, lc.rms_norm_eps);
    std::vector<float> en(e.size());
    rms_norm_rows(e.data(), en.data(), N, H, l0.input_norm, lc.rms_norm_eps);
    std::vector<float> attn_in(static_cast<std::size_t>(N) * 2 * H);  // (N, 2H) = [input_norm(embed) | hidden_norm(h)]
    for (std::size_t t = 0; t < static_cast<std::size_t>(N); ++t) {
      std::memcpy(row_of(attn_in, t, 2 * H), row_of(en, t, H), sizeof(float) * H);
      std::memcpy(row_of(attn_in, t, 2 * H) + H, row_of(hn, t, H), sizeof(float) * H);
    }
    x = c.norm_before_residual ? hn : h;
    decoder_layer(l0, lc, rope_, attn_in.data(), 0, seqs, x.data(), scratch);
  }
  std::vector<float> xn(x.size());
  for (int l = first_standard_layer; l < c.num_layers; ++l) {
    const PackedLayer& w = layers[static_cast<std::size_t>(l)];
    rms_norm_rows(x.data(), xn.data(), N, H, w.input_norm, lc.rms_norm_eps);
    decoder_layer(w, lc, rope_, xn.data(), l, seqs, x.data(), scratch);
  }

  std::vector<EagleHead::Output> results(B);
  // The output head once over every entry's logit rows: (R, H) -> (R, Vd), entry i's from logit_first[i].
  std::vector<std::size_t> logit_first(B + 1, 0);
  for (std::size_t i = 0; i < B; ++i) logit_first[i + 1] = logit_first[i] + entries[i].in->logit_rows.size();
  const int R = static_cast<int>(logit_first[B]);
  if (R > 0) {
    const int Vd = output_head_->rows();
    std::vector<float> rows(static_cast<std::size_t>(R) * H);  // (R, H)
    for (std::size_t i = 0; i < B; ++i) {
      const std::vector<int>& logit_rows = entries[i].in->logit_rows;
      for (std::size_t j = 0; j < logit_rows.size(); ++j)
        std::memcpy(row_of(rows, logit_first[i] + j, H), row_of(x, static_cast<std::size_t>(first[i] + logit_rows[j]), H),
                    sizeof(float) * H);
    }
    // EAGLE-1 feeds the layer output straight into the target's LM head; the others normalise.
    if (c.kind != EagleKind::eagle1) {
      std::vector<float> normed(rows.size());
      rms_norm_rows(rows.data(), normed.data(), R, H, norm, lc.rms_norm_eps);
      rows.swap(normed);
    }
    std::vector<float> logits(static_cast<std::size_t>(R) * Vd);  // (R, Vd)
    linear(*output_head_, nullptr, rows.data(), H, R, logits.data(), Vd, false);
    for (std::size_t i = 0; i < B; ++i) {
      const int Ri = static_cast<int>(logit_first[i + 1] - logit_first[i]);
      if (Ri == 0) continue;
      results[i].logits.resize(Ri, Vd);
      std::memcpy(results[i].logits.data(), row_of(logits, logit_first[i], Vd), sizeof(float) * Ri * Vd);
    }
  }
  for (std::size_t i = 0; i < B; ++i) {
    const int T = first[i + 1] - first[i];
    results[i].hidden.resize(T, H);
    std::memcpy(results[i].hidden.data(), row_of(x, static_cast<std::size_t>(first[i]), H), sizeof(float) * T * H);
  }
  return results;
}

EagleHead::Output CpuEagleEngine::forward(KVCache& cache, const EagleHead::Input& in) const {
  std::vector<Entry> entries(1);
  prepare(cache, in, entries[0]);
  return std::move(run(entries)[0]);
}

std::vector<EagleHead::Output> CpuEagleEngine::forward_batch(const std::vector<EagleHead::BatchEntry>& batch) const {
  // EagleHead::forward_batch checked the inputs and that the caches are distinct; the caches are
  // checked here, all before any is touched.
  std::vector<Entry> entries(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    try {
      prepare(*batch[i].cache, *batch[i].input, entries[i]);
    } catch (const Error& e) {
      throw Error("eagle head forward_batch: entry " + std::to_string(i) + ": " + e.what());
    }
  }
  if (entries.empty()) return {};
  return run(entries);
}

}  // namespace

EagleHead cpu_eagle_head(const EagleHead& head) {
  active_isa();  // an invalid SPECDEC_CPU_ISA is reported here, before any kernel runs
  head.require_weights("cpu_eagle_head");
  return head.with_engine(std::make_shared<const CpuEagleEngine>(head, nullptr, nullptr));
}

EagleHead cpu_eagle_head(EagleHead&& head, const CpuTransformer* target) {
  active_isa();
  head.require_weights("cpu_eagle_head");
  EagleWeights weights = head.release_weights();
  auto engine = std::make_shared<const CpuEagleEngine>(head, &weights, target);
  return head.with_engine(std::move(engine));
}

}  // namespace specdec::cpu
