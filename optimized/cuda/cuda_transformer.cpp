#include "optimized/cuda/cuda_transformer.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "optimized/cpu/cpu_transformer.hpp"
#include "optimized/cuda/cuda_decoder_layer.hpp"
#include "optimized/cuda/cuda_kv_cache.hpp"
#include "optimized/cuda/device_ops.hpp"
#include "optimized/cuda/device_weights.hpp"
#include "reference/core/error.hpp"
#include "reference/io/checkpoint_reader.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/decoder_layer.hpp"
#include "reference/model/precision.hpp"
#include "reference/model/rope.hpp"

namespace specdec::cuda {

namespace {

// ForwardRequest::argmax_only on the device: for R logit rows, R ids and R first-NaN indices come
// back, (2R), not R·V logits.
std::vector<int32_t> pick_on_device(DeviceRuntime& rt, const float* logits, int R, int V, DeviceBuffer<int32_t>& scratch) {
  int32_t* d = grown(rt, scratch, 2 * static_cast<std::size_t>(R));  // (R) ids, then (R) first NaNs
  kernels::RowArgmax k;
  k.x = logits, k.ldx = V, k.rows = R, k.n = V, k.index = d, k.first_nan = d + R;
  rt.launch(k);
  std::vector<int32_t> host(2 * static_cast<std::size_t>(R));
  rt.copy_to_host(host.data(), d, sizeof(int32_t) * host.size());
  return host;
}

// Rows [at, at + n) of pick_on_device's answer for R rows as one request's argmax; a row the
// reference's argmax refuses is refused with its message.
void take_picks(const std::vector<int32_t>& picks, int R, int at, int n, int V, ForwardResult& result) {
  for (int r = at; r < at + n; ++r) {
    const int32_t nan = picks[static_cast<std::size_t>(R + r)];
    if (nan < V)
      throw Error("argmax: logit of token " + std::to_string(nan) + " is NaN; expected finite logits (-inf allowed for masked tokens)");
    if (picks[static_cast<std::size_t>(r)] < 0)
      throw Error("argmax: all " + std::to_string(V) + " logits are -inf; expected at least one token that can be chosen");
  }
  result.argmax.assign(picks.begin() + at, picks.begin() + at + n);
  result.logits.resize(0, V);
}

// An entry's failure names the entry in a batch; a single forward keeps forward's own message.
[[noreturn]] void rethrow_for_entry(const Error& e, bool batched, std::size_t i) {
  if (!batched) throw e;
  throw Error("forward_batch: entry " + std::to_string(i) + ": " + e.what());
}

}  // namespace

struct CudaTransformer::Impl {
  std::shared_ptr<DeviceRuntime> rt;
  ModelConfig config;
  Dtype precision;
  Rope rope;
  DeviceMatrix embed;
  std::vector<DeviceLayer> layers;
  DeviceBuffer<float> norm;
  std::optional<DeviceMatrix> lm_head;
  std::size_t step_bytes = 0;

  // Per-forward scratch (forward is const but not reentrant).
  mutable LayerScratch scratch;
  mutable DeviceBuffer<int32_t> ids, rows, picks;
  mutable DeviceBuffer<float> x, xn, h, picked, logits;

  Impl(std::shared_ptr<DeviceRuntime> r, ModelConfig c, Dtype p)
      : rt(std::move(r)), config(std::move(c)), precision(p), rope(config) {}
  const DeviceMatrix& head() const { return lm_head ? *lm_head : embed; }
  // The forward of every entry in one pass (forward: a batch of one, `batched` false, whose
  // messages carry no entry index). Entries already checked by check_batch_entries.
  std::vector<ForwardResult> run(const std::vector<BatchEntry>& batch, bool batched) const;
  // Every layer, the final norm, the LM head and one embedding row.
  void count_step_bytes() {
    step_bytes = sizeof(float) * norm.size() + head().bytes() +
                 static_cast<std::size_t>(config.hidden_size) * (precision == Dtype::F32 ? 4 : 2);
    for (const DeviceLayer& l : layers) step_bytes += l.bytes();
  }
};

CudaTransformer::CudaTransformer(std::shared_ptr<DeviceRuntime> runtime, ModelConfig config, const LlamaWeights& weights,
                                 Dtype precision) {
  if (!runtime) throw Error("cuda backend: no device runtime given");
  check_weight_precision(precision, "cuda backend");
  validate_model_config(config, "model");
  check_checkpoint_weights(config, weights, "model");
  impl_ = std::make_unique<Impl>(std::move(runtime), std::move(config), precision);
  Impl& m = *impl_;
  DeviceRuntime& rt = *m.rt;
  const ModelConfig& c = m.config;
  m.embed = upload_matrix(rt, weights.embed_tokens, precision, "model.embed_tokens.weight");
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    m.layers.push_back(upload_layer(rt, weights.layers[static_cast<std::size_t>(l)], precision,
                                    "model.layers." + std::to_string(l) + "."));
  }
  m.norm = upload_vector(rt, weights.norm);
  if (!c.tie_word_embeddings) m.lm_head = upload_matrix(rt, weights.lm_head, precision, "lm_head.weight");
  m.count_step_bytes();
}

CudaTransformer::CudaTransformer(std::shared_ptr<DeviceRuntime> runtime, const CheckpointReader& reader, Dtype precision) {
  if (!runtime) throw Error("cuda backend: no device runtime given");
  check_weight_precision(precision, "cuda backend, checkpoint '" + reader.path().string() + "'");
  ModelConfig config = reader.config();
  validate_model_config(config, reader.path().string());
  impl_ = std::make_unique<Impl>(std::move(runtime), std::move(config), precision);
  Impl& m = *impl_;
  DeviceRuntime& rt = *m.rt;
  const ModelConfig& c = m.config;
  m.embed = upload_matrix(rt, reader.matrix("model.embed_tokens.weight", c.vocab_size, c.hidden_size), precision,
                          "model.embed_tokens.weight");
  for (int l = 0; l < c.num_hidden_layers; ++l)
    m.layers.push_back(upload_layer(rt, load_layer_weights(reader, l), precision, "model.layers." + std::to_string(l) + "."));
  m.norm = upload_vector(rt, reader.vector("model.norm.weight", c.hidden_size));
  if (!c.tie_word_embeddings) {
    reader.check_shape("lm_head.weight", c.vocab_size, c.hidden_size, " (config.json has tie_word_embeddings false)");
    m.lm_head = upload_matrix(rt, reader.matrix("lm_head.weight", c.vocab_size, c.hidden_size), precision, "lm_head.weight");
  }
  m.count_step_bytes();
}

CudaTransformer::CudaTransformer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<CudaTransformer> CudaTransformer::random(std::shared_ptr<DeviceRuntime> runtime, ModelConfig config,
                                                         Dtype precision, uint64_t seed) {
  if (!runtime) throw Error("cuda backend: no device runtime given");
  check_weight_precision(precision, "cuda backend");
  validate_model_config(config, "model");
  auto impl = std::make_unique<Impl>(std::move(runtime), std::move(config), precision);
  Impl& m = *impl;
  DeviceRuntime& rt = *m.rt;
  const ModelConfig& c = m.config;
  const int H = c.hidden_size, I = c.intermediate_size, qd = c.q_dim(), kvd = c.kv_dim();
  uint64_t stream = seed * 1000003u;
  // Linear weights ~ U(-1/sqrt(in), 1/sqrt(in)): activations keep their scale through the layers.
  auto matrix = [&](int rows, int cols) {
    return random_matrix(rt, rows, cols, precision, ++stream, 1.0f / std::sqrt(static_cast<float>(cols)));
  };
  auto ones = [&](int n, bool present) { return present ? upload_vector(rt, Vector::Ones(n)) : DeviceBuffer<float>(); };
  auto zeros = [&](int n, bool present) { return present ? upload_vector(rt, Vector::Zero(n)) : DeviceBuffer<float>(); };
  m.embed = random_matrix(rt, c.vocab_size, H, precision, ++stream, 1.0f);
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    DeviceLayer d;
    d.input_norm = ones(H, true);
    d.post_norm = ones(H, true);
    d.q_norm = ones(c.head_dim, c.qk_norm);
    d.k_norm = ones(c.head_dim, c.qk_norm);
    d.q = matrix(qd, H), d.k = matrix(kvd, H), d.v = matrix(kvd, H), d.o = matrix(H, qd);
    d.gate = matrix(I, H), d.up = matrix(I, H), d.down = matrix(H, I);
    d.q_bias = zeros(qd, c.attention_bias), d.k_bias = zeros(kvd, c.attention_bias), d.v_bias = zeros(kvd, c.attention_bias);
    d.o_bias = zeros(H, c.o_proj_bias);
    d.gate_bias = zeros(I, c.mlp_bias), d.up_bias = zeros(I, c.mlp_bias), d.down_bias = zeros(H, c.mlp_bias);
    m.layers.push_back(std::move(d));
  }
  m.norm = ones(H, true);
  if (!c.tie_word_embeddings) m.lm_head = matrix(c.vocab_size, H);
  m.count_step_bytes();
  return std::unique_ptr<CudaTransformer>(new CudaTransformer(std::move(impl)));
}

CudaTransformer::~CudaTransformer() = default;

const ModelConfig& CudaTransformer::config() const { return impl_->config; }
Dtype CudaTransformer::precision() const { return impl_->precision; }
DeviceRuntime& CudaTransformer::runtime() const { return *impl_->rt; }
std::size_t CudaTransformer::weight_bytes_per_step() const { return impl_->step_bytes; }

std::unique_ptr<KVCache> CudaTransformer::new_cache(int capacity) const {
  return std::make_unique<CudaKVCache>(*impl_->rt, impl_->config.num_hidden_layers, impl_->config.kv_dim(), capacity);
}

ForwardResult CudaTransformer::forward(KVCache& cache, const ForwardRequest& request) const {
  return std::move(impl_->run({BatchEntry{&cache, &request}}, false).front());
}

std::vector<ForwardResult> CudaTransformer::forward_batch(const std::vector<BatchEntry>& batch) const {
  check_batch_entries(batch, "forward_batch");
  return impl_->run(batch, true);
}

std::vector<ForwardResult> CudaTransformer::Impl::run(const std::vector<BatchEntry>& batch, bool batched) const {
  const ModelConfig& c = config;
  const std::size_t N = batch.size();
  if (N == 0) return {};
  const int H = c.hidden_size, L = c.num_hidden_layers, V = c.vocab_size;

  // Every entry's checks before any cache is touched: a bad request leaves every cache as it was.
  std::vector<CudaKVCache*> caches(N);
  std::vector<std::optional<AttentionMask>> mask_storage(N);  // sized once: blocks point into it
  std::vector<TokenBlock> blocks(N);
  for (std::size_t i = 0; i < N; ++i) {
    const ForwardRequest& request = *batch[i].request;
    try {
      auto* cache = dynamic_cast<CudaKVCache*>(batch[i].cache);
      if (!cache) throw Error("forward: the KV cache was not created by the cuda backend (use CudaTransformer::new_cache)");
      if (&cache->runtime() != rt.get()) throw Error("forward: the KV cache lives on another device runtime");
      if (cache->layers() != L || cache->kv_dim() != c.kv_dim()) {
        throw Error("forward: the KV cache has " + std::to_string(cache->layers()) + " layers of width " +
                    std::to_string(cache->kv_dim()) + ", this model needs " + std::to_string(L) + " of width " +
                    std::to_string(c.kv_dim()) + " (a cache of another model?)");
      }
      check_forward_request(c, request);
      blocks[i] = make_token_block(request, rope, cache->length(), mask_storage[i]);
      cache->check_append(static_cast<int>(request.tokens.size()));
      caches[i] = cache;
    } catch (const Error& e) {
      rethrow_for_entry(e, batched, i);
    }
  }
  // Entry i's rows are rows [row0[i], row0[i] + T_i) of the stacked activations.
  std::vector<int> row0(N);
  std::vector<int32_t> tokens;
  for (std::size_t i = 0; i < N; ++i) {
    const ForwardRequest& request = *batch[i].request;
    row0[i] = static_cast<int>(tokens.size());
    tokens.insert(tokens.end(), request.tokens.begin(), request.tokens.end());
    blocks[i].first_slot = caches[i]->append(static_cast<int>(request.tokens.size()), blocks[i].positions.data());
  }
  const int T = static_cast<int>(tokens.size());
  const std::size_t uT = static_cast<std::size_t>(T);

  // What the kernels read besides weights: ids, masks, positions, RoPE tables (host-computed).
  int32_t* d_ids = grown(*rt, ids, uT);
  rt->copy_to_device(d_ids, tokens.data(), sizeof(int32_t) * uT);
  const DeviceTokenBlock b = upload_token_blocks(*rt, blocks, caches, c.num_attention_heads, c.head_dim, scratch);
  float* d_x = grown(*rt, x, uT * H);    // (T, H) residual stream, every entry's rows
  float* d_xn = grown(*rt, xn, uT * H);  // (T, H) input-normed

  std::vector<ForwardResult> results(N);
  std::vector<float> host_state;
  // The hidden state entering layer `index` (L: after the final norm) into every entry that asks.
  auto record_aux = [&](int index, const float* state) {  // state: (T, H) on the device
    bool copied = false;
    for (std::size_t i = 0; i < N; ++i) {
      const ForwardRequest& request = *batch[i].request;
      const int Ti = static_cast<int>(request.tokens.size());
      for (std::size_t a = 0; a < request.aux_layers.size(); ++a) {
        if (request.aux_layers[a] != index) continue;
        if (!copied) {
          host_state.resize(uT * H);
          rt->copy_to_host(host_state.data(), state, sizeof(float) * host_state.size());
          copied = true;
        }
        Matrix& aux = results[i].aux_hidden;
        if (aux.size() == 0) aux.resize(Ti, static_cast<Eigen::Index>(request.aux_layers.size()) * H);
        for (int t = 0; t < Ti; ++t)
          std::copy_n(host_state.begin() + static_cast<std::ptrdiff_t>(row0[i] + t) * H, H,
                      aux.row(t).data() + static_cast<std::ptrdiff_t>(a) * H);
      }
    }
  };

  embedding(*rt, embed, d_ids, T, d_x);
  for (int l = 0; l < L; ++l) {
    record_aux(l, d_x);
    const DeviceLayer& w = layers[static_cast<std::size_t>(l)];
    rms_norm(*rt, d_x, H, w.input_norm.get(), d_xn, H, T, H, c.rms_norm_eps);
    decoder_layer(*rt, w, c, l, d_xn, H, b, d_x, scratch);
  }
  float* d_h = grown(*rt, h, uT * H);  // (T, H) after the final norm
  rms_norm(*rt, d_x, H, norm.get(), d_h, H, T, H, c.rms_norm_eps);
  record_aux(L, d_h);

  // The LM head over every entry's logit rows at once: first the rows of entries that want only
  // the argmax (picked on the device), then those whose logits come back.
  std::vector<int32_t> picked_rows;
  std::vector<int> at(N);
  for (const bool argmax_pass : {true, false}) {
    for (std::size_t i = 0; i < N; ++i) {
      const ForwardRequest& request = *batch[i].request;
      if (request.argmax_only != argmax_pass) continue;
      at[i] = static_cast<int>(picked_rows.size());
      for (const int r : request.logit_rows) picked_rows.push_back(row0[i] + r);
    }
  }
  int n_argmax = 0;
  for (std::size_t i = 0; i < N; ++i)
    if (batch[i].request->argmax_only) n_argmax += static_cast<int>(batch[i].request->logit_rows.size());
  const int R = static_cast<int>(picked_rows.size());
  if (R > 0) {
    int32_t* d_rows = grown(*rt, rows, picked_rows.size());
    rt->copy_to_device(d_rows, picked_rows.data(), sizeof(int32_t) * picked_rows.size());
    float* d_picked = grown(*rt, picked, static_cast<std::size_t>(R) * H);  // (R, H)
    rt->launch(kernels::GatherRows{d_h, H, d_rows, d_picked, H, R, H});
    float* d_logits = grown(*rt, logits, static_cast<std::size_t>(R) * V);  // (R, V)
    linear(*rt, {{&head(), nullptr, d_logits, V}}, d_picked, H, R, H);
    std::vector<int32_t> chosen;  // (2·n_argmax)
    if (n_argmax > 0) chosen = pick_on_device(*rt, d_logits, n_argmax, V, picks);
    for (std::size_t i = 0; i < N; ++i) {
      const ForwardRequest& request = *batch[i].request;
      const int Ri = static_cast<int>(request.logit_rows.size());
      if (Ri == 0) continue;
      if (request.argmax_only) {
        try {
          take_picks(chosen, n_argmax, at[i], Ri, V, results[i]);
        } catch (const Error& e) {
          rethrow_for_entry(e, batched, i);
        }
      } else {
        results[i].logits.resize(Ri, V);
        rt->copy_to_host(results[i].logits.data(), d_logits + static_cast<std::size_t>(at[i]) * V,
                         sizeof(float) * static_cast<std::size_t>(Ri) * V);
      }
    }
  }
  for (std::size_t i = 0; i < N; ++i) {
    const ForwardRequest& request = *batch[i].request;
    if (!request.final_hidden) continue;
    const int Ti = static_cast<int>(request.tokens.size());
    results[i].final_hidden.resize(Ti, H);
    rt->copy_to_host(results[i].final_hidden.data(), d_h + static_cast<std::size_t>(row0[i]) * H,
                     sizeof(float) * static_cast<std::size_t>(Ti) * H);
  }
  rt->synchronize();
  return results;
}

std::unique_ptr<CudaTransformer> load_cuda_transformer(std::shared_ptr<DeviceRuntime> runtime,
                                                       const std::filesystem::path& path) {
  return load_cuda_transformer(std::move(runtime), path, cpu::stored_precision(path));
}

std::unique_ptr<CudaTransformer> load_cuda_transformer(std::shared_ptr<DeviceRuntime> runtime,
                                                       const std::filesystem::path& path, Dtype precision) {
  check_weight_precision(precision, "cuda backend, checkpoint '" + path.string() + "'");
  return std::make_unique<CudaTransformer>(std::move(runtime), CheckpointReader(path), precision);
}

}  // namespace specdec::cuda
