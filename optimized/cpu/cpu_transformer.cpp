#include "optimized/cpu/cpu_transformer.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "optimized/cpu/cpu_decoder_layer.hpp"
#include "optimized/cpu/cpu_kv_cache.hpp"
#include "optimized/cpu/fused_linear.hpp"
#include "optimized/cpu/packed_matrix.hpp"
#include "reference/core/error.hpp"
#include "reference/model/argmax_rows.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/io/tensor_store.hpp"
#include "reference/model/rope.hpp"

namespace specdec::cpu {

struct CpuTransformer::Impl {
  ModelConfig config;
  Dtype precision;
  Rope rope;
  PackedMatrix embed;                // [V, H]
  std::vector<PackedLayer> layers;   // L
  std::vector<float> norm;           // (H)
  std::optional<PackedMatrix> lm_head;  // [V, H]; absent when tied
  std::size_t step_bytes = 0;

  Impl(ModelConfig c, Dtype p) : config(std::move(c)), precision(p), rope(config) {}
  const PackedMatrix& head() const { return lm_head ? *lm_head : embed; }
};

CpuTransformer::CpuTransformer(ModelConfig config, const LlamaWeights& weights, Dtype precision) {
  check_weight_precision(precision, "cpu backend");
  validate_model_config(config, "model");
  check_checkpoint_weights(config, weights, "model");
  impl_ = std::make_unique<Impl>(std::move(config), precision);
  Impl& m = *impl_;
  const ModelConfig& c = m.config;
  m.embed = PackedMatrix(weights.embed_tokens, precision, "model.embed_tokens.weight");
  std::size_t bytes = 0;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string prefix = "model.layers." + std::to_string(l) + ".";
    PackedLayer pl = pack_layer(weights.layers[static_cast<std::size_t>(l)], precision, prefix);
    bytes += pl.bytes();
    m.layers.push_back(std::move(pl));
  }
  m.norm = to_vector(weights.norm);
  if (!c.tie_word_embeddings) m.lm_head.emplace(weights.lm_head, precision, "lm_head.weight");
  bytes += sizeof(float) * m.norm.size() + m.head().bytes() + static_cast<std::size_t>(c.hidden_size) * m.embed.element_size();
  m.step_bytes = bytes;
}

CpuTransformer::~CpuTransformer() = default;

const ModelConfig& CpuTransformer::config() const { return impl_->config; }
Dtype CpuTransformer::precision() const { return impl_->precision; }
std::size_t CpuTransformer::weight_bytes_per_step() const { return impl_->step_bytes; }

std::unique_ptr<KVCache> CpuTransformer::new_cache(int capacity) const {
  return std::make_unique<CpuKVCache>(impl_->config.num_hidden_layers, impl_->config.kv_dim(), capacity);
}

ForwardResult CpuTransformer::forward(KVCache& cache_base, const ForwardRequest& request) const {
  const Impl& m = *impl_;
  const ModelConfig& c = m.config;
  auto* cache = dynamic_cast<CpuKVCache*>(&cache_base);
  if (!cache) throw Error("forward: the KV cache was not created by the cpu backend (use CpuTransformer::new_cache)");
  if (cache->layers() != c.num_hidden_layers || cache->kv_dim() != c.kv_dim()) {
    throw Error("forward: the KV cache has " + std::to_string(cache->layers()) + " layers of width " +
                std::to_string(cache->kv_dim()) + ", this model needs " + std::to_string(c.num_hidden_layers) +
                " of width " + std::to_string(c.kv_dim()) + " (a cache of another model?)");
  }
  const int T = static_cast<int>(request.tokens.size());
  const int H = c.hidden_size, L = c.num_hidden_layers;
  check_forward_request(c, request);
  bool wants_all_final = request.final_hidden;
  for (int a : request.aux_layers)
    if (a == L) wants_all_final = true;
  std::optional<AttentionMask> mask_storage;
  const TokenBlock block = make_token_block(request, m.rope, cache->length(), mask_storage);
  cache->append(T, block.positions.data());  // block.first_slot

  // x: (T, H) residual stream; after the last layer only the rows kept (see below).
  std::vector<float> x(static_cast<std::size_t>(T) * H);
  for (int t = 0; t < T; ++t) m.embed.widen_row(request.tokens[static_cast<std::size_t>(t)], &x[static_cast<std::size_t>(t) * H]);

  ForwardResult result;
  const int n_aux = static_cast<int>(request.aux_layers.size());
  if (n_aux) result.aux_hidden.resize(T, static_cast<Eigen::Index>(n_aux) * H);
  auto record_aux = [&](int index, const float* state) {  // state: (T, H)
    for (int a = 0; a < n_aux; ++a) {
      if (request.aux_layers[static_cast<std::size_t>(a)] != index) continue;
      for (int t = 0; t < T; ++t)
        std::memcpy(result.aux_hidden.row(t).data() + static_cast<std::size_t>(a) * H, state + static_cast<std::size_t>(t) * H,
                    sizeof(float) * H);
    }
  };

  // The last layer's attention output and MLP only matter for the rows whose final state is
  // returned; every row is independent, so skipping the others changes nothing else.
  std::vector<int> all_rows(static_cast<std::size_t>(T));
  for (int t = 0; t < T; ++t) all_rows[static_cast<std::size_t>(t)] = t;
  std::vector<int> final_rows = all_rows;
  if (!wants_all_final) {
    final_rows = request.logit_rows;
    std::sort(final_rows.begin(), final_rows.end());
    final_rows.erase(std::unique(final_rows.begin(), final_rows.end()), final_rows.end());
  }

  std::vector<float> xn(static_cast<std::size_t>(T) * H);  // (T, H) normed input of the attention
  LayerScratch scratch;
  int n = T;  // rows of x currently held
  for (int l = 0; l < L; ++l) {
    record_aux(l, x.data());
    const PackedLayer& w = m.layers[static_cast<std::size_t>(l)];
    rms_norm_rows(x.data(), xn.data(), T, H, w.input_norm, c.rms_norm_eps);
    const bool last = l == L - 1;
    const std::vector<int>& rows = last ? final_rows : all_rows;
    if (last && rows.size() != all_rows.size()) {
      for (std::size_t i = 0; i < rows.size(); ++i) {
        std::memmove(&x[i * H], &x[static_cast<std::size_t>(rows[i]) * H], sizeof(float) * H);
      }
      n = static_cast<int>(rows.size());
    }
    decoder_layer(w, c, m.rope, xn.data(), *cache, l, block, rows, x.data(), scratch);
  }
  // h: (n, H) after the final norm, row i for token final_rows[i].
  std::vector<float> h(static_cast<std::size_t>(n) * H);
  rms_norm_rows(x.data(), h.data(), n, H, m.norm, c.rms_norm_eps);
  if (wants_all_final) record_aux(L, h.data());

  if (!request.logit_rows.empty()) {
    const int R = static_cast<int>(request.logit_rows.size());
    std::vector<float> rows(static_cast<std::size_t>(R) * H);
    for (int i = 0; i < R; ++i) {
      const int t = request.logit_rows[static_cast<std::size_t>(i)];
      const auto at = std::lower_bound(final_rows.begin(), final_rows.end(), t) - final_rows.begin();
      std::memcpy(&rows[static_cast<std::size_t>(i) * H], &h[static_cast<std::size_t>(at) * H], sizeof(float) * H);
    }
    result.logits.resize(R, c.vocab_size);
    linear(m.head(), nullptr, rows.data(), H, R, result.logits.data(), c.vocab_size, false);  // (R, V)
  }
  apply_argmax_only(request, result);
  if (request.final_hidden) {
    result.final_hidden.resize(T, H);
    std::memcpy(result.final_hidden.data(), h.data(), sizeof(float) * h.size());
  }
  return result;
}

LlamaWeights rounded_llama_weights(const LlamaWeights& weights, Dtype precision) {
  check_weight_precision(precision, "rounded_llama_weights");
  LlamaWeights r = weights;
  auto round = [precision](Matrix& m) { round_to_precision(m.data(), static_cast<std::size_t>(m.size()), precision); };
  round(r.embed_tokens);
  round(r.lm_head);
  for (LayerWeights& l : r.layers)
    for (Matrix* m : layer_matrices(l)) round(*m);
  return r;
}

Dtype stored_precision(const std::filesystem::path& path) {
  const TensorStore store(path);
  std::optional<Dtype> common;
  for (const std::string& name : store.names()) {
    const TensorInfo& info = store.info(name);
    if (info.shape.size() != 2 || !is_float_dtype(info.dtype)) continue;
    if (!common) {
      common = info.dtype;
    } else if (*common != info.dtype) {
      return Dtype::F32;
    }
  }
  return common && (*common == Dtype::BF16 || *common == Dtype::F16) ? *common : Dtype::F32;
}

std::unique_ptr<CpuTransformer> load_cpu_transformer(const std::filesystem::path& path) {
  return load_cpu_transformer(path, stored_precision(path));
}

std::unique_ptr<CpuTransformer> load_cpu_transformer(const std::filesystem::path& path, Dtype precision) {
  check_weight_precision(precision, "cpu backend, checkpoint '" + path.string() + "'");
  LlamaModel model = load_llama_checkpoint(path);
  return std::make_unique<CpuTransformer>(std::move(model.config), model.weights, precision);
}

}  // namespace specdec::cpu
