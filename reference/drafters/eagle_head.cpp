#include "reference/drafters/eagle_head.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <set>

#include "reference/core/error.hpp"
#include "reference/core/normal_source.hpp"
#include "reference/io/safetensors.hpp"
#include "reference/drafters/eagle_tensors.hpp"
#include "reference/model/decoder_layer.hpp"
#include "reference/model/ops.hpp"

namespace specdec {

void check_eagle_weights(const EagleHeadConfig& c, const EagleWeights& weights, const std::string& source) {
  if (weights.layers.size() != static_cast<std::size_t>(c.num_layers)) {
    throw Error(source + ": weights have " + std::to_string(weights.layers.size()) + " layers, the config has " +
                std::to_string(c.num_layers));
  }
  // The lists only take addresses; nothing is modified.
  EagleWeights& w = const_cast<EagleWeights&>(weights);
  const std::vector<EagleTensor> wanted = eagle_tensors(c, w);
  std::set<const void*> called_for;
  for (const EagleTensor& t : wanted) {
    if (t.actual_shape() != t.shape()) {
      throw Error(source + ": tensor '" + t.name + "' has shape " + shape_string(t.actual_shape()) + ", the " +
                  eagle_kind_name(c.kind) + " config calls for " + shape_string(t.shape()));
    }
    called_for.insert(t.m ? static_cast<const void*>(t.m) : static_cast<const void*>(t.v));
  }
  for (const EagleTensor& t : all_eagle_members(c, w)) {
    const void* p = t.m ? static_cast<const void*>(t.m) : static_cast<const void*>(t.v);
    const Eigen::Index size = t.m ? t.m->size() : t.v->size();
    if (!called_for.count(p) && size != 0) {
      throw Error(source + ": weights carry '" + t.name + "' but the " + eagle_kind_name(c.kind) +
                  " config has no place for it");
    }
  }

  const int64_t V = c.target_vocab, Vd = c.draft_vocab;
  if (w.d2t.empty()) {
    if (Vd != V) {
      throw Error(source + ": tensor 'd2t' is missing: draft_vocab_size " + std::to_string(Vd) +
                  " differs from vocab_size " + std::to_string(V));
    }
  } else {
    if (static_cast<int64_t>(w.d2t.size()) != Vd) {
      throw Error(source + ": tensor 'd2t' has " + std::to_string(w.d2t.size()) + " entries, expected draft_vocab_size " +
                  std::to_string(Vd));
    }
    std::vector<uint8_t> seen(static_cast<std::size_t>(V), 0);
    for (int64_t d = 0; d < Vd; ++d) {
      const int64_t off = w.d2t[static_cast<std::size_t>(d)];
      const int64_t t = (off > INT64_MAX - d || off < INT64_MIN + d) ? -1 : d + off;
      if (t < 0 || t >= V) {
        throw Error(source + ": tensor 'd2t' maps draft id " + std::to_string(d) + " (offset " + std::to_string(off) +
                    ") to target id " + std::to_string(d) + " + " + std::to_string(off) + ", outside [0, " +
                    std::to_string(V) + ")");
      }
      if (seen[static_cast<std::size_t>(t)]) {
        throw Error(source + ": tensor 'd2t' maps two draft ids to target id " + std::to_string(t));
      }
      seen[static_cast<std::size_t>(t)] = 1;
    }
    if (!w.t2d.empty()) {
      if (static_cast<int64_t>(w.t2d.size()) != V) {
        throw Error(source + ": tensor 't2d' has " + std::to_string(w.t2d.size()) + " entries, expected vocab_size " +
                    std::to_string(V));
      }
      for (int64_t t = 0; t < V; ++t) {
        if ((w.t2d[static_cast<std::size_t>(t)] != 0) != (seen[static_cast<std::size_t>(t)] != 0)) {
          throw Error(source + ": tensor 't2d' disagrees with 'd2t' at target id " + std::to_string(t) + ": t2d says " +
                      (w.t2d[static_cast<std::size_t>(t)] ? "in" : "not in") + " the draft vocabulary, d2t " +
                      (seen[static_cast<std::size_t>(t)] ? "maps a draft id to it" : "does not reach it"));
        }
      }
    }
  }
  if (w.d2t.empty() && !w.t2d.empty()) {
    throw Error(source + ": tensor 't2d' is given without 'd2t'");
  }
}

EagleHead::EagleHead(EagleHeadConfig config, EagleWeights weights, const TargetTensors& target, const std::string& source)
    : config_(std::move(config)), target_(target), rope_(config_.layer) {
  validate_eagle_config(config_, source);
  check_eagle_config_against_target(config_, target.config(), source);
  check_eagle_weights(config_, weights, source);
  // t2d follows from d2t; keep it explicit so in_draft_vocab is a lookup.
  if (!weights.d2t.empty() && weights.t2d.empty()) {
    weights.t2d.assign(static_cast<std::size_t>(config_.target_vocab), 0);
    for (std::size_t d = 0; d < weights.d2t.size(); ++d) {
      weights.t2d[static_cast<std::size_t>(static_cast<int64_t>(d) + weights.d2t[d])] = 1;
    }
  }
  weights_ = std::make_shared<EagleWeights>(std::move(weights));
}

EagleHead EagleHead::with_engine(std::shared_ptr<const EagleHeadEngine> engine) const {
  EagleHead head = *this;
  head.engine_ = std::move(engine);
  return head;
}

EagleWeights EagleHead::release_weights() {
  if (weights_released_) throw Error("release_weights: this head's fp32 weights were already handed to an engine");
  // Sole owner: move. Another copy of the head still computes with them: copy.
  EagleWeights all = weights_.use_count() == 1 ? std::move(*weights_) : *weights_;
  EagleWeights kept;
  kept.fc_bias = all.fc_bias;
  kept.hidden_norm = all.hidden_norm;
  kept.embed_norm = all.embed_norm;
  kept.layers.resize(all.layers.size());
  for (std::size_t l = 0; l < all.layers.size(); ++l) {
    const std::array<Vector*, 11> from = layer_vectors(all.layers[l]);
    const std::array<Vector*, 11> to = layer_vectors(kept.layers[l]);
    for (std::size_t i = 0; i < from.size(); ++i) *to[i] = *from[i];
  }
  kept.norm = all.norm;
  kept.d2t = all.d2t;
  kept.t2d = all.t2d;
  kept.mask_hidden = all.mask_hidden;
  weights_ = std::make_shared<EagleWeights>(std::move(kept));
  weights_released_ = true;
  return all;
}

void EagleHead::require_weights(const std::string& what) const {
  if (weights_released_) {
    throw Error(what + ": this head's fp32 weights were given to the engine it was bound to (release_weights); "
                "load the head again to run it in the reference, save it or take its fingerprint");
  }
}

const Matrix& EagleHead::embeddings() const {
  return config_.own_embeddings ? weights_->embed_tokens : target_.embed_tokens();
}

bool EagleHead::shares_target_head() const {
  return config_.kind == EagleKind::eagle1 || (config_.kind == EagleKind::mtp && !config_.own_lm_head);
}

const Matrix& EagleHead::output_head() const {
  return shares_target_head() ? target_.output_head() : weights_->lm_head;
}

std::unique_ptr<KVCache> EagleHead::new_cache(int capacity) const {
  if (engine_) return engine_->new_cache(capacity);
  return std::make_unique<DenseKVCache>(config_.num_layers, config_.layer.kv_dim(), capacity);
}

int32_t EagleHead::to_target(int32_t d) const {
  if (d < 0 || d >= config_.draft_vocab) {
    throw Error("to_target: draft id " + std::to_string(d) + " outside the draft vocabulary [0, " +
                std::to_string(config_.draft_vocab) + ")");
  }
  return weights_->d2t.empty() ? d : static_cast<int32_t>(d + weights_->d2t[static_cast<std::size_t>(d)]);
}

bool EagleHead::in_draft_vocab(int32_t t) const {
  if (t < 0 || t >= config_.target_vocab) {
    throw Error("in_draft_vocab: token id " + std::to_string(t) + " outside the vocabulary [0, " +
                std::to_string(config_.target_vocab) + ")");
  }
  return weights_->t2d.empty() || weights_->t2d[static_cast<std::size_t>(t)] != 0;
}

EagleHead::Output EagleHead::forward(KVCache& cache, const Input& in) const {
  check_input(in);
  return engine_ ? engine_->forward(cache, in) : reference_forward(cache, in);
}

std::vector<EagleHead::Output> EagleHead::forward_batch(const std::vector<BatchEntry>& batch) const {
  std::set<const KVCache*> seen;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const std::string where = "eagle head forward_batch: entry " + std::to_string(i) + ": ";
    if (!batch[i].cache || !batch[i].input) throw Error(where + "no " + (batch[i].cache ? "input" : "cache"));
    if (!seen.insert(batch[i].cache).second) {
      throw Error(where + "uses a KV cache an earlier entry uses (each sequence of a batch needs its own cache)");
    }
    try {
      check_input(*batch[i].input);
    } catch (const Error& e) {
      throw Error(where + e.what());
    }
  }
  if (engine_) return engine_->forward_batch(batch);
  std::vector<Output> out;
  out.reserve(batch.size());
  for (const BatchEntry& e : batch) out.push_back(reference_forward(*e.cache, *e.input));
  return out;
}

std::vector<EagleHead::Output> EagleHeadEngine::forward_batch(const std::vector<EagleHead::BatchEntry>& batch) const {
  std::vector<EagleHead::Output> out;
  out.reserve(batch.size());
  for (const EagleHead::BatchEntry& e : batch) out.push_back(forward(*e.cache, *e.input));
  return out;
}

void EagleHead::check_input(const Input& in) const {
  const EagleHeadConfig& c = config_;
  const std::string where = "eagle head forward: ";
  const int T = static_cast<int>(in.tokens.size());
  const int H = c.layer.hidden_size;
  if (T == 0) throw Error(where + "no tokens given");
  if (!in.projected.empty() && static_cast<int>(in.projected.size()) != T) {
    throw Error(where + std::to_string(in.projected.size()) + " projected flags given for " + std::to_string(T) + " tokens");
  }
  int n_projected = 0;
  for (int t = 0; t < T; ++t) n_projected += in.is_projected(t) ? 1 : 0;
  if (n_projected > 0 && c.reads_final_hidden()) {
    throw Error(where + (c.kind == EagleKind::mtp ? "an MTP module" : "an EAGLE-1 head") +
                " has no projected rows: every feature goes through fc with the embedding");
  }
  if (in.zero_embedding_at_position_0 && c.kind != EagleKind::mtp) {
    throw Error(where + "zero_embedding_at_position_0 is an MTP option");
  }
  if (in.features.rows() != T) {
    throw Error(where + "features have " + std::to_string(in.features.rows()) + " rows for " + std::to_string(T) + " tokens");
  }
  const int F = c.feature_width();
  const bool width_ok = in.features.cols() == F || (n_projected == T && in.features.cols() == H);
  if (!width_ok || (n_projected > 0 && in.features.cols() < H)) {
    throw Error(where + "features are " + std::to_string(in.features.cols()) + " wide, expected " + std::to_string(F) +
                (c.reads_final_hidden() ? " (the target's hidden size)" : " (n_aux x target hidden size)") +
                (n_projected == T ? " or " + std::to_string(H) + " (every row projected)" : std::string()));
  }
  for (int r : in.logit_rows) {
    if (r < 0 || r >= T) throw Error(where + "logit row " + std::to_string(r) + " outside [0, " + std::to_string(T) + ")");
  }
  for (int32_t tok : in.tokens) {  // the embedding table is [V, H], the head's own or the target's
    if (tok < 0 || tok >= c.target_vocab) {
      throw Error(where + "token id " + std::to_string(tok) + " outside the vocabulary [0, " +
                  std::to_string(c.target_vocab) + ")");
    }
  }
}

EagleHead::Output EagleHead::reference_forward(KVCache& cache_base, const Input& in) const {
  const EagleHeadConfig& c = config_;
  const EagleWeights& weights = *weights_;
  const ModelConfig& lc = c.layer;
  const std::string where = "eagle head forward: ";
  require_weights("eagle head forward in the reference");
  auto* cache = dynamic_cast<DenseKVCache*>(&cache_base);
  if (!cache) throw Error(where + "the KV cache was not created by the reference backend (use EagleHead::new_cache)");
  check_head_cache(c, cache->layers(), cache->kv_dim());
  const int T = static_cast<int>(in.tokens.size());
  const int H = lc.hidden_size;
  const int F = c.feature_width();
  const Matrix& embed = embeddings();  // [V, H]
  std::optional<AttentionMask> mask_storage;
  const TokenBlock block = head_token_block(in, rope_, cache->length(), mask_storage);

  Matrix e(T, H);  // e: (T, H) token embeddings
  for (int t = 0; t < T; ++t) e.row(t) = embed.row(in.tokens[static_cast<std::size_t>(t)]);
  if (in.zero_embedding_at_position_0) {
    for (int t = 0; t < T; ++t)
      if (block.positions[static_cast<std::size_t>(t)] == 0) e.row(t).setZero();
  }
  cache->append(T, block.positions.data());  // every check is done: only now touch the cache

  const LayerWeights& l0 = weights.layers.front();
  Matrix out;  // out: (T, H) residual stream
  if (c.kind == EagleKind::mtp) {
    const Matrix en = ops::rms_norm(e, weights.embed_norm, lc.rms_norm_eps);             // (T, H)
    const Matrix hn = ops::rms_norm(in.features, weights.hidden_norm, lc.rms_norm_eps);  // (T, H)
    Matrix cat(T, 2 * H);  // cat: (T, 2H) = [enorm(embed) | hnorm(h)], MiMo [hnorm(h) | enorm(embed)]
    cat.leftCols(H) = c.hidden_first ? hn : en;
    cat.rightCols(H) = c.hidden_first ? en : hn;
    out = ops::linear(cat, weights.fc);  // (T, H), no bias
    for (int l = 0; l < c.num_layers; ++l) {
      const LayerWeights& w = weights.layers[static_cast<std::size_t>(l)];
      out = decoder_layer(w, lc, rope_, out, ops::rms_norm(out, w.input_layernorm, lc.rms_norm_eps), *cache, l, block);
    }
  } else if (c.kind == EagleKind::eagle1) {
    Matrix cat(T, H + F);  // cat: (T, H + Ht) = [embed | feature], embedding first
    cat.leftCols(H) = e;
    cat.rightCols(F) = in.features;
    const Matrix x = ops::linear(cat, weights.fc, weights.fc_bias);  // (T, H)
    out = decoder_layer(l0, lc, rope_, x, x, *cache, 0, block);          // no input norm
  } else {
    Matrix h(T, H);  // h: (T, H) fused (or fed-back) hidden state
    std::vector<int> rows;
    for (int t = 0; t < T; ++t) {
      if (in.is_projected(t)) {
        h.row(t) = in.features.row(t).head(H);
      } else {
        rows.push_back(t);
      }
    }
    if (!rows.empty()) {
      Matrix aux(static_cast<Eigen::Index>(rows.size()), F);  // (n, n_aux·Ht)
      for (std::size_t i = 0; i < rows.size(); ++i) aux.row(static_cast<Eigen::Index>(i)) = in.features.row(rows[i]);
      const Matrix fused = ops::linear(aux, weights.fc, weights.fc_bias);  // (n, H)
      for (std::size_t i = 0; i < rows.size(); ++i) h.row(rows[i]) = fused.row(static_cast<Eigen::Index>(i));
    }
    const Matrix hn = ops::rms_norm(h, weights.hidden_norm, lc.rms_norm_eps);
    Matrix attn_in(T, 2 * H);  // (T, 2H) = [input_norm(embed) | hidden_norm(h)]
    attn_in.leftCols(H) = ops::rms_norm(e, l0.input_layernorm, lc.rms_norm_eps);
    attn_in.rightCols(H) = hn;
    out = decoder_layer(l0, lc, rope_, c.norm_before_residual ? hn : h, attn_in, *cache, 0, block);
  }
  for (int l = 1; l < c.num_layers && c.kind != EagleKind::mtp; ++l) {
    const LayerWeights& w = weights.layers[static_cast<std::size_t>(l)];
    out = decoder_layer(w, lc, rope_, out, ops::rms_norm(out, w.input_layernorm, lc.rms_norm_eps), *cache, l, block);
  }

  Output result;
  if (!in.logit_rows.empty()) {
    Matrix rows(static_cast<Eigen::Index>(in.logit_rows.size()), H);  // (R, H)
    for (std::size_t i = 0; i < in.logit_rows.size(); ++i) rows.row(static_cast<Eigen::Index>(i)) = out.row(in.logit_rows[i]);
    // EAGLE-1 feeds the layer output straight into the target's LM head; the others normalise.
    if (c.kind != EagleKind::eagle1) rows = ops::rms_norm(rows, weights.norm, lc.rms_norm_eps);
    result.logits = ops::linear(rows, output_head());  // (R, Vd)
  }
  result.hidden = std::move(out);
  return result;
}

void check_head_cache(const EagleHeadConfig& c, int layers, int kv_dim) {
  if (layers != c.num_layers || kv_dim != c.layer.kv_dim()) {
    throw Error("eagle head forward: the KV cache has " + std::to_string(layers) + " layers of width " +
                std::to_string(kv_dim) + ", the head needs " + std::to_string(c.num_layers) + " of width " +
                std::to_string(c.layer.kv_dim()) + " (use EagleHead::new_cache)");
  }
}

TokenBlock head_token_block(const EagleHead::Input& in, const Rope& rope, int first_slot,
                            std::optional<AttentionMask>& mask_storage) {
  ForwardRequest request;
  request.tokens = in.tokens;
  request.positions = in.positions;
  request.mask = in.mask;
  TokenBlock block = make_token_block(request, rope, first_slot, mask_storage);
  if (in.mask) block.mask = &*in.mask;  // not the local request's copy, which dies here
  return block;
}

EagleHead random_eagle_head(EagleHeadConfig config, const TargetTensors& target, uint64_t seed, float stddev) {
  const std::string source = "random_eagle_head";
  if (!config.reads_final_hidden() && config.aux_layers.empty()) {
    config.aux_layers = default_aux_layers(target.config().num_hidden_layers);
  }
  validate_eagle_config(config, source);
  check_eagle_config_against_target(config, target.config(), source);
  if (!std::isfinite(stddev) || stddev < 0.0f) {
    throw Error(source + ": stddev must be a non-negative number, got " + std::to_string(stddev));
  }
  NormalSource normal(seed);
  EagleWeights w;
  w.layers.resize(static_cast<std::size_t>(config.num_layers));
  // Drawn in checkpoint order; changing the order changes every random head.
  for (const EagleTensor& t : eagle_tensors(config, w)) {
    float* data;
    Eigen::Index n;
    if (t.m) {
      t.m->resize(t.rows, t.cols);
      data = t.m->data();
      n = t.m->size();
    } else {
      t.v->resize(t.rows);
      data = t.v->data();
      n = t.v->size();
    }
    for (Eigen::Index i = 0; i < n; ++i) {
      data[i] = t.is_norm ? static_cast<float>(1.0 + 0.1 * normal.next()) : static_cast<float>(stddev * normal.next());
    }
  }
  if (config.draft_vocab < config.target_vocab) {
    // A seeded random subset of the target vocabulary, ascending as real draft vocabularies are.
    std::vector<int64_t> ids(static_cast<std::size_t>(config.target_vocab));
    std::iota(ids.begin(), ids.end(), int64_t{0});
    for (std::size_t i = 0; i < static_cast<std::size_t>(config.draft_vocab); ++i) {
      const std::size_t j = i + static_cast<std::size_t>(normal.bits() % (ids.size() - i));
      std::swap(ids[i], ids[j]);
    }
    ids.resize(static_cast<std::size_t>(config.draft_vocab));
    std::sort(ids.begin(), ids.end());
    for (std::size_t d = 0; d < ids.size(); ++d) w.d2t.push_back(ids[d] - static_cast<int64_t>(d));
  }
  return EagleHead(std::move(config), std::move(w), target, source);
}

}  // namespace specdec
