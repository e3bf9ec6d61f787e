#include "optimized/cuda/cuda_transformer.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "optimized/cpu/cpu_transformer.hpp"
#include "optimized/cuda/cuda_kv_cache.hpp"
#include "reference/core/error.hpp"
#include "reference/core/half.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/decoder_layer.hpp"
#include "reference/model/precision.hpp"
#include "reference/model/rope.hpp"

namespace specdec::cuda {

namespace {

using kernels::WeightType;

// A matrix in device memory in its stored precision. rows × cols, row-major.
struct DeviceMatrix {
  WeightType type = WeightType::kF32;
  DeviceBuffer<unsigned char> data;
  int rows = 0, cols = 0;
  std::size_t bytes() const { return data.size(); }
};

DeviceMatrix upload_matrix(DeviceRuntime& rt, const Matrix& m, Dtype precision, const std::string& name) {
  DeviceMatrix d;
  d.rows = static_cast<int>(m.rows());
  d.cols = static_cast<int>(m.cols());
  const std::size_t n = static_cast<std::size_t>(m.size());
  if (precision == Dtype::F32) {
    d.type = WeightType::kF32;
    d.data = DeviceBuffer<unsigned char>(rt, reinterpret_cast<const unsigned char*>(m.data()), n * sizeof(float));
    return d;
  }
  std::vector<uint16_t> narrow(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float v = m.data()[i];
    if (precision == Dtype::F16 && std::isfinite(v) && std::fabs(v) > 65504.0f)
      throw Error(name + ": weight " + std::to_string(v) + " at element " + std::to_string(i) +
                  " is beyond the F16 range (±65504)");
    narrow[i] = precision == Dtype::BF16 ? float_to_bfloat16(v) : float_to_half(v);
  }
  d.type = precision == Dtype::BF16 ? WeightType::kBF16 : WeightType::kF16;
  d.data = DeviceBuffer<unsigned char>(rt, reinterpret_cast<const unsigned char*>(narrow.data()), n * sizeof(uint16_t));
  return d;
}

DeviceBuffer<float> upload_vector(DeviceRuntime& rt, const Vector& v) {
  return DeviceBuffer<float>(rt, v.data(), static_cast<std::size_t>(v.size()));
}

// Calls f with the weight type as a compile-time constant (kernels are templates over it).
template <class F>
void with_weight_type(WeightType type, F&& f) {
  switch (type) {
    case WeightType::kF32:
      return f(std::integral_constant<WeightType, WeightType::kF32>{});
    case WeightType::kBF16:
      return f(std::integral_constant<WeightType, WeightType::kBF16>{});
    case WeightType::kF16:
      return f(std::integral_constant<WeightType, WeightType::kF16>{});
  }
}

// y_m = x · W_mᵀ + b_m for the (up to three) matrices of one fused launch; T > 64 in chunks (every
// row is independent, so chunking changes no bit). The one-token form serves T = 1.
struct LinearOut {
  const DeviceMatrix* w;
  const float* bias;
  float* y;
  long long ldy;
};

template <WeightType W, int TPG>
void linear_chunk(DeviceRuntime& rt, const std::vector<LinearOut>& outs, const float* x, long long ldx, int T, int in) {
  kernels::Linear<W, TPG> k;
  k.outputs = static_cast<int>(outs.size());
  for (std::size_t i = 0; i < outs.size(); ++i)
    k.out[i] = {outs[i].w->data.get(), outs[i].bias, outs[i].y, outs[i].w->rows, outs[i].ldy};
  k.x = x, k.ldx = ldx, k.T = T, k.in = in;
  rt.launch(k);
}

template <WeightType W>
void linear_typed(DeviceRuntime& rt, std::vector<LinearOut> outs, const float* x, long long ldx, int T, int in) {
  if (T == 1) return linear_chunk<W, 1>(rt, outs, x, ldx, 1, in);
  for (int t0 = 0; t0 < T; t0 += kernels::kLinearMaxTokens) {
    const int n = std::min(kernels::kLinearMaxTokens, T - t0);
    std::vector<LinearOut> chunk = outs;
    for (LinearOut& o : chunk) o.y += t0 * o.ldy;
    linear_chunk<W, kernels::kTokensPerGroup>(rt, chunk, x + t0 * ldx, ldx, n, in);
  }
}

void linear(DeviceRuntime& rt, const std::vector<LinearOut>& outs, const float* x, long long ldx, int T, int in) {
  with_weight_type(outs.front().w->type, [&](auto W) { linear_typed<decltype(W)::value>(rt, outs, x, ldx, T, in); });
}

template <WeightType W, int TPG>
void gate_up_chunk(DeviceRuntime& rt, const DeviceMatrix& g, const DeviceMatrix& u, const float* bg, const float* bu,
                   const float* x, long long ldx, float* act, long long ldact, int T) {
  kernels::GateUpSwiglu<W, TPG> k;
  k.gate = g.data.get(), k.up = u.data.get(), k.gate_bias = bg, k.up_bias = bu;
  k.x = x, k.ldx = ldx, k.act = act, k.ldact = ldact, k.T = T, k.in = g.cols, k.features = g.rows;
  rt.launch(k);
}

template <WeightType W>
void gate_up_typed(DeviceRuntime& rt, const DeviceMatrix& g, const DeviceMatrix& u, const float* bg, const float* bu,
                   const float* x, long long ldx, float* act, long long ldact, int T) {
  if (T == 1) return gate_up_chunk<W, 1>(rt, g, u, bg, bu, x, ldx, act, ldact, 1);
  for (int t0 = 0; t0 < T; t0 += kernels::kLinearMaxTokens) {
    const int n = std::min(kernels::kLinearMaxTokens, T - t0);
    gate_up_chunk<W, kernels::kTokensPerGroup>(rt, g, u, bg, bu, x + t0 * ldx, ldx, act + t0 * ldact, ldact, n);
  }
}

void gate_up_swiglu(DeviceRuntime& rt, const DeviceMatrix& g, const DeviceMatrix& u, const float* bg, const float* bu,
                    const float* x, long long ldx, float* act, long long ldact, int T) {
  with_weight_type(g.type, [&](auto W) { gate_up_typed<decltype(W)::value>(rt, g, u, bg, bu, x, ldx, act, ldact, T); });
}

void embedding(DeviceRuntime& rt, const DeviceMatrix& table, const int32_t* ids, int T, float* y) {
  with_weight_type(table.type, [&](auto W) {
    kernels::EmbeddingGather<decltype(W)::value> k;
    k.table = table.data.get(), k.ids = ids, k.y = y, k.ldy = table.cols, k.T = T, k.vocab = table.rows,
    k.width = table.cols;
    rt.launch(k);
  });
}

void rms_norm(DeviceRuntime& rt, const float* x, long long ldx, const float* w, float* y, long long ldy, int rows, int n,
              double eps) {
  rt.launch(kernels::RmsNorm{x, ldx, w, y, ldy, rows, n, static_cast<float>(eps)});
}

const float* or_null(const DeviceBuffer<float>& b) { return b ? b.get() : nullptr; }

struct DeviceLayer {
  DeviceBuffer<float> input_norm, post_norm, q_norm, k_norm;
  DeviceMatrix q, k, v, o, gate, up, down;
  DeviceBuffer<float> q_bias, k_bias, v_bias, o_bias, gate_bias, up_bias, down_bias;
};

// Device scratch that grows to the largest request seen.
template <class T>
T* grown(DeviceRuntime& rt, DeviceBuffer<T>& b, std::size_t n) {
  if (b.size() < n) b = DeviceBuffer<T>(rt, std::max<std::size_t>(n, 2 * b.size()));
  return b.get();
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
  mutable DeviceBuffer<int32_t> ids, q_pos, slot_pos, rows;
  mutable DeviceBuffer<uint8_t> mask;
  mutable DeviceBuffer<float> x, xn, qkv, attn, tmp, act, cos, sin, scores, h, picked, logits;

  Impl(std::shared_ptr<DeviceRuntime> r, ModelConfig c, Dtype p)
      : rt(std::move(r)), config(std::move(c)), precision(p), rope(config) {}
  const DeviceMatrix& head() const { return lm_head ? *lm_head : embed; }
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
  std::size_t bytes = 0;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const LayerWeights& w = weights.layers[static_cast<std::size_t>(l)];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    DeviceLayer d;
    d.input_norm = upload_vector(rt, w.input_layernorm);
    d.post_norm = upload_vector(rt, w.post_attention_layernorm);
    d.q_norm = upload_vector(rt, w.q_norm);
    d.k_norm = upload_vector(rt, w.k_norm);
    d.q = upload_matrix(rt, w.q_proj, precision, p + "self_attn.q_proj.weight");
    d.k = upload_matrix(rt, w.k_proj, precision, p + "self_attn.k_proj.weight");
    d.v = upload_matrix(rt, w.v_proj, precision, p + "self_attn.v_proj.weight");
    d.o = upload_matrix(rt, w.o_proj, precision, p + "self_attn.o_proj.weight");
    d.gate = upload_matrix(rt, w.gate_proj, precision, p + "mlp.gate_proj.weight");
    d.up = upload_matrix(rt, w.up_proj, precision, p + "mlp.up_proj.weight");
    d.down = upload_matrix(rt, w.down_proj, precision, p + "mlp.down_proj.weight");
    d.q_bias = upload_vector(rt, w.q_bias);
    d.k_bias = upload_vector(rt, w.k_bias);
    d.v_bias = upload_vector(rt, w.v_bias);
    d.o_bias = upload_vector(rt, w.o_bias);
    d.gate_bias = upload_vector(rt, w.gate_bias);
    d.up_bias = upload_vector(rt, w.up_bias);
    d.down_bias = upload_vector(rt, w.down_bias);
    for (const DeviceMatrix* mat : {&d.q, &d.k, &d.v, &d.o, &d.gate, &d.up, &d.down}) bytes += mat->bytes();
    for (const DeviceBuffer<float>* v : {&d.input_norm, &d.post_norm, &d.q_norm, &d.k_norm, &d.q_bias, &d.k_bias,
                                         &d.v_bias, &d.o_bias, &d.gate_bias, &d.up_bias, &d.down_bias})
      bytes += sizeof(float) * v->size();
    m.layers.push_back(std::move(d));
  }
  m.norm = upload_vector(rt, weights.norm);
  if (!c.tie_word_embeddings) m.lm_head = upload_matrix(rt, weights.lm_head, precision, "lm_head.weight");
  const std::size_t element = precision == Dtype::F32 ? 4 : 2;
  m.step_bytes = bytes + sizeof(float) * m.norm.size() + m.head().bytes() + static_cast<std::size_t>(c.hidden_size) * element;
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
  const int H = c.hidden_size, L = c.num_hidden_layers, I = c.intermediate_size;
  const int nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  const int qd = c.q_dim(), kvd = c.kv_dim(), qkvd = qd + 2 * kvd;
  check_forward_request(c, request);
  std::optional<AttentionMask> mask_storage;
  const TokenBlock block = make_token_block(request, m.rope, cache->length(), mask_storage);
  const int first = cache->append(T, block.positions.data());
  const int cols = first + T;
  const std::size_t uT = static_cast<std::size_t>(T);

  // What the kernels read besides weights: ids, the mask, positions, RoPE tables (host-computed).
  int32_t* ids = grown(rt, m.ids, uT);
  rt.copy_to_device(ids, request.tokens.data(), sizeof(int32_t) * uT);
  std::vector<uint8_t> mask_bytes(uT * cols);
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < cols; ++j) mask_bytes[static_cast<std::size_t>(t) * cols + j] = block.mask->allowed(t, j) ? 1 : 0;
  uint8_t* mask = grown(rt, m.mask, mask_bytes.size());
  rt.copy_to_device(mask, mask_bytes.data(), mask_bytes.size());
  int32_t* q_pos = grown(rt, m.q_pos, uT);
  rt.copy_to_device(q_pos, block.positions.data(), sizeof(int32_t) * uT);
  int32_t* slot_pos = grown(rt, m.slot_pos, static_cast<std::size_t>(cols));
  rt.copy_to_device(slot_pos, cache->positions().data(), sizeof(int32_t) * cols);
  const int half = hd / 2;
  std::vector<float> cs(uT * half), sn(uT * half);
  for (int t = 0; t < T; ++t) {
    const Rope::Angles& a = block.angles[static_cast<std::size_t>(t)];
    std::copy(a.cos.begin(), a.cos.end(), cs.begin() + static_cast<std::ptrdiff_t>(t) * half);
    std::copy(a.sin.begin(), a.sin.end(), sn.begin() + static_cast<std::ptrdiff_t>(t) * half);
  }
  float* cos = grown(rt, m.cos, cs.size());
  float* sin = grown(rt, m.sin, sn.size());
  rt.copy_to_device(cos, cs.data(), sizeof(float) * cs.size());
  rt.copy_to_device(sin, sn.data(), sizeof(float) * sn.size());

  float* x = grown(rt, m.x, uT * H);         // (T, H) residual stream
  float* xn = grown(rt, m.xn, uT * H);       // (T, H) normed
  float* qkv = grown(rt, m.qkv, uT * qkvd);  // (T, q | k | v)
  float* attn = grown(rt, m.attn, uT * qd);  // (T, nh·hd)
  float* tmp = grown(rt, m.tmp, uT * H);     // (T, H) a sublayer's output
  float* act = grown(rt, m.act, uT * I);     // (T, I)
  float* scores = grown(rt, m.scores, uT * nh * cols);

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
    linear(rt, {{&w.q, or_null(w.q_bias), qkv, qkvd}, {&w.k, or_null(w.k_bias), qkv + qd, qkvd},
                {&w.v, or_null(w.v_bias), qkv + qd + kvd, qkvd}},
           xn, H, T, H);
    if (w.q_norm) {  // Qwen3: RMSNorm over each head before RoPE, in place
      for (int t = 0; t < T; ++t) {
        float* q = qkv + static_cast<std::size_t>(t) * qkvd;
        rms_norm(rt, q, hd, w.q_norm.get(), q, hd, nh, hd, c.rms_norm_eps);
        rms_norm(rt, q + qd, hd, w.k_norm.get(), q + qd, hd, nkv, hd, c.rms_norm_eps);
      }
    }
    rt.launch(kernels::RopeApply{qkv, qkvd, cos, sin, T, nh, hd});
    rt.launch(kernels::RopeApply{qkv + qd, qkvd, cos, sin, T, nkv, hd});
    // The new keys and values into their cache slots.
    rt.launch(kernels::GatherRows{qkv + qd, qkvd, nullptr, cache->keys(l) + static_cast<std::size_t>(first) * kvd, kvd, T, kvd});
    rt.launch(kernels::GatherRows{qkv + qd + kvd, qkvd, nullptr, cache->values(l) + static_cast<std::size_t>(first) * kvd,
                                  kvd, T, kvd});
    kernels::Attention a;
    a.q = qkv, a.ldq = qkvd, a.k = cache->keys(l), a.v = cache->values(l), a.ldkv = kvd, a.mask = mask, a.q_pos = q_pos,
    a.slot_pos = slot_pos, a.window = c.layer_sliding_window(l), a.out = attn, a.ldo = qd, a.scratch = scores, a.T = T,
    a.heads = nh, a.kv_heads = nkv, a.hd = hd, a.cols = cols, a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    rt.launch(a);
    linear(rt, {{&w.o, or_null(w.o_bias), tmp, H}}, attn, qd, T, qd);
    rt.launch(kernels::ResidualAdd{x, tmp, x, static_cast<long long>(uT * H)});
    rms_norm(rt, x, H, w.post_norm.get(), xn, H, T, H, c.rms_norm_eps);
    gate_up_swiglu(rt, w.gate, w.up, or_null(w.gate_bias), or_null(w.up_bias), xn, H, act, I, T);
    linear(rt, {{&w.down, or_null(w.down_bias), tmp, H}}, act, I, T, I);
    rt.launch(kernels::ResidualAdd{x, tmp, x, static_cast<long long>(uT * H)});
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
    result.logits.resize(R, c.vocab_size);
    rt.copy_to_host(result.logits.data(), logits, sizeof(float) * static_cast<std::size_t>(R) * c.vocab_size);
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
