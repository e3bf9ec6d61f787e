#include "optimized/cpu/cpu_transformer.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "optimized/cpu/cpu_decoder_layer.hpp"
#include "optimized/cpu/cpu_isa.hpp"
#include "optimized/cpu/cpu_kv_cache.hpp"
#include "optimized/cpu/fused_linear.hpp"
#include "optimized/cpu/packed_matrix.hpp"
#include "reference/core/error.hpp"
#include "reference/model/argmax_rows.hpp"
#include "reference/io/checkpoint_reader.hpp"
#include "reference/io/gguf.hpp"
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

  // One sequence of a forward, checked and ready to compute. Built in place and never moved:
  // block.mask may point into mask_storage.
  struct Entry {
    CpuKVCache* cache = nullptr;
    const ForwardRequest* request = nullptr;
    std::optional<AttentionMask> mask_storage;
    TokenBlock block;
  };
  // Every check of forward, with its messages; touches no cache.
  void prepare(KVCache& cache, const ForwardRequest& request, Entry& e) const;
  // Appends every entry to its cache and computes them together, each weight read once.
  std::vector<ForwardResult> run(std::vector<Entry>& entries) const;
};

CpuTransformer::CpuTransformer(ModelConfig config, const LlamaWeights& weights, Dtype precision) {
  check_weight_precision(precision, "cpu backend");
  active_isa();  // an invalid SPECDEC_CPU_ISA is reported here, before any kernel runs
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

CpuTransformer::CpuTransformer(const CheckpointReader& reader, Dtype precision) {
  check_weight_precision(precision, "cpu backend, checkpoint '" + reader.path().string() + "'");
  active_isa();
  ModelConfig config = reader.config();
  validate_model_config(config, reader.path().string());
  impl_ = std::make_unique<Impl>(std::move(config), precision);
  Impl& m = *impl_;
  const ModelConfig& c = m.config;
  // An embedding or LM head a chunk of rows at a time; its file pages given back after. Memory
  // beside the packed model: one chunk of fp32 rows.
  auto packed = [&](const std::string& name, const std::string& hint) {
    reader.check_shape(name, c.vocab_size, c.hidden_size, hint);
    PackedMatrix p(c.vocab_size, c.hidden_size, precision, name,
                   [&](int64_t first, int64_t n, float* out) { reader.read_rows(name, first, n, out); });
    reader.release(name);
    return p;
  };
  m.embed = packed("model.embed_tokens.weight", "");
  std::size_t bytes = 0;
  LayerShape shape;
  shape.q = c.q_dim();
  shape.kv = c.kv_dim();
  shape.in = shape.hidden = c.hidden_size;
  shape.intermediate = c.intermediate_size;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string prefix = "model.layers." + std::to_string(l) + ".";
    const std::array<std::string, 7> names = layer_matrix_names(l);  // LayerMatrix's order
    // Norms and biases read, matrix shapes checked; the matrices packed from the file's rows.
    const LayerWeights vectors = load_layer_weights(reader, l, false);
    PackedLayer pl = pack_layer(
        shape,
        [&](LayerMatrix which, int64_t first, int64_t n, float* out) {
          reader.read_rows(names[static_cast<std::size_t>(which)], first, n, out);
        },
        vectors, precision, prefix);
    for (const std::string& name : names) reader.release(name);
    bytes += pl.bytes();
    m.layers.push_back(std::move(pl));
  }
  m.norm = to_vector(reader.vector("model.norm.weight", c.hidden_size));
  if (!c.tie_word_embeddings) m.lm_head.emplace(packed("lm_head.weight", " (config.json has tie_word_embeddings false)"));
  bytes += sizeof(float) * m.norm.size() + m.head().bytes() + static_cast<std::size_t>(c.hidden_size) * m.embed.element_size();
  m.step_bytes = bytes;
}

CpuTransformer::~CpuTransformer() = default;

const ModelConfig& CpuTransformer::config() const { return impl_->config; }
Dtype CpuTransformer::precision() const { return impl_->precision; }
const PackedMatrix& CpuTransformer::embeddings() const { return impl_->embed; }
const PackedMatrix& CpuTransformer::output_head() const { return impl_->head(); }
std::size_t CpuTransformer::weight_bytes_per_step() const { return impl_->step_bytes; }

std::unique_ptr<KVCache> CpuTransformer::new_cache(int capacity) const {
  return std::make_unique<CpuKVCache>(impl_->config.num_hidden_layers, impl_->config.kv_dim(), capacity);
}

void CpuTransformer::Impl::prepare(KVCache& cache_base, const ForwardRequest& request, Entry& e) const {
  const ModelConfig& c = config;
  auto* cache = dynamic_cast<CpuKVCache*>(&cache_base);
  if (!cache) throw Error("forward: the KV cache was not created by the cpu backend (use CpuTransformer::new_cache)");
  if (cache->layers() != c.num_hidden_layers || cache->kv_dim() != c.kv_dim()) {
    throw Error("forward: the KV cache has " + std::to_string(cache->layers()) + " layers of width " +
                std::to_string(cache->kv_dim()) + ", this model needs " + std::to_string(c.num_hidden_layers) +
                " of width " + std::to_string(c.kv_dim()) + " (a cache of another model?)");
  }
  check_forward_request(c, request);
  e.block = make_token_block(request, rope, cache->length(), e.mask_storage);
  cache->check_append(static_cast<int>(request.tokens.size()));
  e.cache = cache;
  e.request = &request;
}

std::vector<ForwardResult> CpuTransformer::Impl::run(std::vector<Entry>& entries) const {
  const ModelConfig& c = config;
  const int H = c.hidden_size, L = c.num_hidden_layers;
  const std::size_t B = entries.size();
  for (Entry& e : entries) e.cache->append(static_cast<int>(e.request->tokens.size()), e.block.positions.data());

  // Entry i's tokens are rows [first[i], first[i] + T_i) of the concatenated rows.
  std::vector<int> first(B + 1, 0);
  for (std::size_t i = 0; i < B; ++i) first[i + 1] = first[i] + static_cast<int>(entries[i].request->tokens.size());
  const int N = first[B];

  // x: (N, H) residual stream of every entry's tokens; after the last layer only the rows kept.
  std::vector<float> x(static_cast<std::size_t>(N) * H);
  for (std::size_t i = 0; i < B; ++i) {
    const std::vector<int32_t>& tokens = entries[i].request->tokens;
    for (std::size_t t = 0; t < tokens.size(); ++t) embed.widen_row(tokens[t], &x[(static_cast<std::size_t>(first[i]) + t) * H]);
  }

  std::vector<ForwardResult> results(B);
  for (std::size_t i = 0; i < B; ++i) {
    const ForwardRequest& r = *entries[i].request;
    if (!r.aux_layers.empty()) results[i].aux_hidden.resize(first[i + 1] - first[i], static_cast<Eigen::Index>(r.aux_layers.size()) * H);
  }
  // Copies entry i's state at hidden-state index `index` into its aux_hidden. state: (T_i, H).
  auto record_aux = [&](std::size_t i, int index, const float* state) {
    const std::vector<int>& aux = entries[i].request->aux_layers;
    const int T = first[i + 1] - first[i];
    for (std::size_t a = 0; a < aux.size(); ++a) {
      if (aux[a] != index) continue;
      for (int t = 0; t < T; ++t)
        std::memcpy(results[i].aux_hidden.row(t).data() + a * H, state + static_cast<std::size_t>(t) * H, sizeof(float) * H);
    }
  };

  // The last layer's attention output and MLP only matter for the rows whose final state is
  // returned; every row is independent, so skipping the others changes nothing else. Per entry:
  // every row when it wants the final hidden states, else its logit rows, ascending.
  std::vector<LayerSequence> seqs(B);
  std::vector<std::vector<int>> final_rows(B);
  std::vector<bool> wants_all_final(B, false);
  for (std::size_t i = 0; i < B; ++i) {
    const ForwardRequest& r = *entries[i].request;
    seqs[i].cache = entries[i].cache;
    seqs[i].block = &entries[i].block;
    for (int t = 0; t < first[i + 1] - first[i]; ++t) seqs[i].rows.push_back(t);
    wants_all_final[i] = r.final_hidden || std::find(r.aux_layers.begin(), r.aux_layers.end(), L) != r.aux_layers.end();
    if (wants_all_final[i]) {
      final_rows[i] = seqs[i].rows;
    } else {
      final_rows[i] = r.logit_rows;
      std::sort(final_rows[i].begin(), final_rows[i].end());
      final_rows[i].erase(std::unique(final_rows[i].begin(), final_rows[i].end()), final_rows[i].end());
    }
  }

  std::vector<float> xn(static_cast<std::size_t>(N) * H);  // (N, H) normed input of the attention
  LayerScratch scratch;
  for (int l = 0; l < L; ++l) {
    for (std::size_t i = 0; i < B; ++i) record_aux(i, l, &x[static_cast<std::size_t>(first[i]) * H]);
    const PackedLayer& w = layers[static_cast<std::size_t>(l)];
    rms_norm_rows(x.data(), xn.data(), N, H, w.input_norm, c.rms_norm_eps);
    if (l == L - 1) {
      // Keep only each entry's final rows, entry after entry. A row only moves towards the front
      // (ascending rows of ascending entries), so moving front to back overwrites nothing unread.
      std::size_t kept = 0;
      for (std::size_t i = 0; i < B; ++i) {
        for (int t : final_rows[i]) {
          const std::size_t from = static_cast<std::size_t>(first[i] + t);
          if (from != kept) std::memmove(&x[kept * H], &x[from * H], sizeof(float) * H);
          ++kept;
        }
        seqs[i].rows = final_rows[i];
      }
    }
    decoder_layer(w, c, rope, xn.data(), l, seqs, x.data(), scratch);
  }
  // h: (n, H) after the final norm: entry i's final rows from row kept_first[i] on.
  std::vector<std::size_t> kept_first(B + 1, 0);
  for (std::size_t i = 0; i < B; ++i) kept_first[i + 1] = kept_first[i] + final_rows[i].size();
  const int n = static_cast<int>(kept_first[B]);
  std::vector<float> h(static_cast<std::size_t>(n) * H);
  rms_norm_rows(x.data(), h.data(), n, H, norm, c.rms_norm_eps);
  for (std::size_t i = 0; i < B; ++i)
    if (wants_all_final[i]) record_aux(i, L, &h[kept_first[i] * H]);

  // The LM head once over every entry's logit rows: (R, H) -> (R, V), entry i's from logit_first[i].
  std::vector<std::size_t> logit_first(B + 1, 0);
  for (std::size_t i = 0; i < B; ++i) logit_first[i + 1] = logit_first[i] + entries[i].request->logit_rows.size();
  const int R = static_cast<int>(logit_first[B]);
  if (R > 0) {
    const int V = c.vocab_size;
    std::vector<float> rows(static_cast<std::size_t>(R) * H);  // (R, H)
    for (std::size_t i = 0; i < B; ++i) {
      const std::vector<int>& logit_rows = entries[i].request->logit_rows;
      for (std::size_t j = 0; j < logit_rows.size(); ++j) {
        const auto at = std::lower_bound(final_rows[i].begin(), final_rows[i].end(), logit_rows[j]) - final_rows[i].begin();
        std::memcpy(&rows[(logit_first[i] + j) * H], &h[(kept_first[i] + static_cast<std::size_t>(at)) * H], sizeof(float) * H);
      }
    }
    std::vector<float> logits(static_cast<std::size_t>(R) * V);  // (R, V)
    linear(head(), nullptr, rows.data(), H, R, logits.data(), V, false);
    for (std::size_t i = 0; i < B; ++i) {
      const int Ri = static_cast<int>(logit_first[i + 1] - logit_first[i]);
      if (Ri == 0) continue;
      results[i].logits.resize(Ri, V);
      std::memcpy(results[i].logits.data(), &logits[logit_first[i] * V], sizeof(float) * Ri * V);
    }
  }
  for (std::size_t i = 0; i < B; ++i) {
    const ForwardRequest& r = *entries[i].request;
    apply_argmax_only(r, results[i]);
    if (r.final_hidden) {
      const int T = first[i + 1] - first[i];
      results[i].final_hidden.resize(T, H);
      std::memcpy(results[i].final_hidden.data(), &h[kept_first[i] * H], sizeof(float) * T * H);
    }
  }
  return results;
}

ForwardResult CpuTransformer::forward(KVCache& cache, const ForwardRequest& request) const {
  std::vector<Impl::Entry> entries(1);
  impl_->prepare(cache, request, entries[0]);
  return std::move(impl_->run(entries)[0]);
}

std::vector<ForwardResult> CpuTransformer::forward_batch(const std::vector<BatchEntry>& batch) const {
  check_batch_entries(batch, "forward_batch");
  // Every entry's checks before any cache is touched, so that a bad entry leaves every cache as it was.
  std::vector<Impl::Entry> entries(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    try {
      impl_->prepare(*batch[i].cache, *batch[i].request, entries[i]);
    } catch (const Error& e) {
      throw Error("forward_batch: entry " + std::to_string(i) + ": " + e.what());
    }
  }
  if (entries.empty()) return {};
  return impl_->run(entries);
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
  // A GGUF file's config says it: bfloat16 / float16 when every matrix is stored so, else float32.
  if (is_gguf_file(path)) {
    const std::string dtype = load_checkpoint_config(path).torch_dtype;
    return dtype == "bfloat16" ? Dtype::BF16 : dtype == "float16" ? Dtype::F16 : Dtype::F32;
  }
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
  return std::make_unique<CpuTransformer>(CheckpointReader(path), precision);
}

}  // namespace specdec::cpu
