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
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/decoder_layer.hpp"
#include "reference/model/precision.hpp"
#include "reference/model/rope.hpp"

namespace specdec::cuda {

namespace {

// ForwardRequest::argmax_only on the device: R ids (and R NaN positions) come back, not R·V
// logits; a row the reference's argmax refuses is refused with its message.
void pick_on_device(DeviceRuntime& rt, const float* logits, int R, int V, DeviceBuffer<int32_t>& scratch,
                    ForwardResult& result) {
  int32_t* d = grown(rt, scratch, 2 * static_cast<std::size_t>(R));  // (R) ids, then (R) first NaNs
  kernels::RowArgmax k;
  k.x = logits, k.ldx = V, k.rows = R, k.n = V, k.index = d, k.first_nan = d + R;
  rt.launch(k);
  std::vector<int32_t> host(2 * static_cast<std::size_t>(R));
  rt.copy_to_host(host.data(), d, sizeof(int32_t) * host.size());
  for (int r = 0; r < R; ++r) {
    const int32_t nan = host[static_cast<std::size_t>(R + r)];
    if (nan < V)
      throw Error("argmax: logit of token " + std::to_string(nan) + " is NaN; expected finite logits (-inf allowed for masked tokens)");
    if (host[static_cast<std::size_t>(r)] < 0)
      throw Error("argmax: all " + std::to_string(V) + " logits are -inf; expected at least one token that can be chosen");
  }
  result.argmax.assign(host.begin(), host.begin() + R);
  result.logits.resize(0, V);
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

ForwardResult CudaTransformer::forward(KVCache& cache_base, const ForwardRequest& request) const {
  const Impl& m = *impl_;
  DeviceRuntime& rt = *m.rt;
  const ModelConfig& c = m.config;
  auto* cache = dynamic_cast<CudaKVCache*>(&cache_base);
  if (!cache) throw Error("forward: the KV cache was not created by the cuda backend (use CudaTransformer::new_cache)");
  if (&cache->runtime() != &rt) throw Error("forward: the KV cache lives on another device runtime");
  if (cache->layers() != c.num_hidden_layers || cache->kv_dim() != c.kv_dim()) {
    throw Error("forward: the KV cache has " + std::to_string(cache->layers()) + " layers of width " +
                std::to_string(cache->kv_dim()) + ", this model needs " + std::to_string(c.num_hidden_layers) +
                " of width " + std::to_string(c.kv_dim()) + " (a cache of another model?)");
  }
  const int T = static_cast<int>(request.tokens.size());
  const int H = c.hidden_size, L = c.num_hidden_layers;
  check_forward_request(c, request);
  std::optional<AttentionMask> mask_storage;
  TokenBlock block = make_token_block(request, m.rope, cache->length(), mask_storage);
  block.first_slot = cache->append(T, block.positions.data());  // every check is done: only now touch the cache
  const std::size_t uT = static_cast<std::size_t>(T);

  // What the kernels read besides weights: ids, the mask, positions, RoPE tables (host-computed).
  int32_t* ids = grown(rt, m.ids, uT);
  rt.copy_to_device(ids, request.tokens.data(), sizeof(int32_t) * uT);
  const DeviceTokenBlock b = upload_token_block(rt, block, *cache, c.head_dim, m.scratch);
  float* x = grown(rt, m.x, uT * H);    // (T, H) residual stream
  float* xn = grown(rt, m.xn, uT * H);  // (T, H) input-normed

  ForwardResult result;
  const int n_aux = static_cast<int>(request.aux_layers.size());
  if (n_aux) result.aux_hidden.resize(T, static_cast<Eigen::Index>(n_aux) * H);
  std::vector<float> host_state;
  auto record_aux = [&](int index, const float* state) {  // state: (T, H) on the device
    for (int a = 0; a < n_aux; ++a) {
      if (request.aux_layers[static_cast<std::size_t>(a)] != index) continue;
      host_state.resize(uT * H);
      rt.copy_to_host(host_state.data(), state, sizeof(float) * host_state.size());
      for (int t = 0; t < T; ++t)
        std::copy(host_state.begin() + static_cast<std::ptrdiff_t>(t) * H, host_state.begin() + static_cast<std::ptrdiff_t>(t + 1) * H,
                  result.aux_hidden.row(t).data() + static_cast<std::ptrdiff_t>(a) * H);
    }
  };

  embedding(rt, m.embed, ids, T, x);
  for (int l = 0; l < L; ++l) {
    record_aux(l, x);
    const DeviceLayer& w = m.layers[static_cast<std::size_t>(l)];
    rms_norm(rt, x, H, w.input_norm.get(), xn, H, T, H, c.rms_norm_eps);
    decoder_layer(rt, w, c, l, xn, H, *cache, b, x, m.scratch);
  }
  float* h = grown(rt, m.h, uT * H);  // (T, H) after the final norm
  rms_norm(rt, x, H, m.norm.get(), h, H, T, H, c.rms_norm_eps);
  record_aux(L, h);

  if (!request.logit_rows.empty()) {
    const int R = static_cast<int>(request.logit_rows.size());
    const std::vector<int32_t> picked_rows(request.logit_rows.begin(), request.logit_rows.end());
    int32_t* rows = grown(rt, m.rows, picked_rows.size());
    rt.copy_to_device(rows, picked_rows.data(), sizeof(int32_t) * picked_rows.size());
    float* picked = grown(rt, m.picked, static_cast<std::size_t>(R) * H);
    rt.launch(kernels::GatherRows{h, H, rows, picked, H, R, H});
    float* logits = grown(rt, m.logits, static_cast<std::size_t>(R) * c.vocab_size);
    linear(rt, {{&m.head(), nullptr, logits, c.vocab_size}}, picked, H, R, H);
    if (request.argmax_only) {
      pick_on_device(rt, logits, R, c.vocab_size, m.picks, result);
    } else {
      result.logits.resize(R, c.vocab_size);
      rt.copy_to_host(result.logits.data(), logits, sizeof(float) * static_cast<std::size_t>(R) * c.vocab_size);
    }
  }
  if (request.final_hidden) {
    result.final_hidden.resize(T, H);
    rt.copy_to_host(result.final_hidden.data(), h, sizeof(float) * uT * H);
  }
  rt.synchronize();
  return result;
}

std::unique_ptr<CudaTransformer> load_cuda_transformer(std::shared_ptr<DeviceRuntime> runtime,
                                                       const std::filesystem::path& path) {
  return load_cuda_transformer(std::move(runtime), path, cpu::stored_precision(path));
}

std::unique_ptr<CudaTransformer> load_cuda_transformer(std::shared_ptr<DeviceRuntime> runtime,
                                                       const std::filesystem::path& path, Dtype precision) {
  check_weight_precision(precision, "cuda backend, checkpoint '" + path.string() + "'");
  LlamaModel model = load_llama_checkpoint(path);
  return std::make_unique<CudaTransformer>(std::move(runtime), std::move(model.config), model.weights, precision);
}

}  // namespace specdec::cuda
