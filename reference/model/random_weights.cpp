#include "reference/model/random_weights.hpp"

#include <cmath>
#include <random>

#include "reference/core/error.hpp"
#include "reference/core/normal_source.hpp"

namespace specdec {
namespace {

class Filler {
 public:
  Filler(uint64_t seed, double stddev) : normal_(seed), stddev_(stddev) {}

  Matrix matrix(int64_t rows, int64_t cols) {
    Matrix m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<float>(stddev_ * normal_.next());
    return m;
  }
  Vector vector(int64_t n) {
    Vector v(n);
    for (Eigen::Index i = 0; i < v.size(); ++i) v[i] = static_cast<float>(stddev_ * normal_.next());
    return v;
  }
  Vector norm(int64_t n) {
    Vector v(n);
    for (Eigen::Index i = 0; i < v.size(); ++i) v[i] = static_cast<float>(1.0 + 0.1 * normal_.next());
    return v;
  }

 private:
  NormalSource normal_;
  double stddev_;
};

}  // namespace

LlamaWeights random_llama_weights(const ModelConfig& c, uint64_t seed, float stddev) {
  validate_model_config(c, "random_llama_weights config");
  if (!std::isfinite(stddev) || stddev < 0.0f) {
    throw Error("random_llama_weights: stddev must be a non-negative number, got " + std::to_string(stddev));
  }
  const int64_t H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
  const int64_t q = c.q_dim(), kv = c.kv_dim(), hd = c.head_dim;
  Filler f(seed, stddev);
  LlamaWeights w;
  // Drawn in LlamaWeights / LayerWeights declaration order; changing it changes every model.
  w.embed_tokens = f.matrix(V, H);
  w.layers.resize(static_cast<std::size_t>(c.num_hidden_layers));
  for (LayerWeights& l : w.layers) {
    l.input_layernorm = f.norm(H);
    l.q_proj = f.matrix(q, H);
    l.k_proj = f.matrix(kv, H);
    l.v_proj = f.matrix(kv, H);
    if (c.attention_bias) {
      l.q_bias = f.vector(q);
      l.k_bias = f.vector(kv);
      l.v_bias = f.vector(kv);
    }
    l.o_proj = f.matrix(H, q);
    if (c.o_proj_bias) l.o_bias = f.vector(H);
    if (c.qk_norm) {
      l.q_norm = f.norm(hd);
      l.k_norm = f.norm(hd);
    }
    l.post_attention_layernorm = f.norm(H);
    l.gate_proj = f.matrix(I, H);
    l.up_proj = f.matrix(I, H);
    l.down_proj = f.matrix(H, I);
    if (c.mlp_bias) {
      l.gate_bias = f.vector(I);
      l.up_bias = f.vector(I);
      l.down_bias = f.vector(H);
    }
  }
  w.norm = f.norm(H);
  if (!c.tie_word_embeddings) w.lm_head = f.matrix(V, H);
  return w;
}

}  // namespace specdec
