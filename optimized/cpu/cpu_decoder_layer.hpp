#pragma once
// One Llama decoder layer on the cpu kernels, shared by the target (cpu_transformer) and the
// EAGLE-family heads (cpu_eagle_head): as reference/model/decoder_layer, the attention input may
// differ from the residual stream (EAGLE-1 omits the input norm; EAGLE-3's first layer reads
// concat(norm(emb), norm(h)) of width 2H while the residual stays h).
#include <string>
#include <functional>
#include <vector>

#include "optimized/cpu/cpu_kv_cache.hpp"
#include "optimized/cpu/packed_matrix.hpp"
#include "reference/model/decoder_layer.hpp"
#include "reference/model/model_config.hpp"
#include "reference/model/rope.hpp"
#include "reference/model/weights.hpp"

namespace specdec::cpu {

// One decoder layer, packed: q/k/v stacked into one matrix (one pass over the attention input),
// gate and up interleaved for the fused SwiGLU. Norm weights and biases stay fp32.
struct PackedLayer {
  std::vector<float> input_norm, post_norm;  // (H)
  PackedMatrix qkv;                          // [(nh + 2·nkv)·hd, K], K = the attention input's width
  std::vector<float> qkv_bias;               // ((nh + 2·nkv)·hd) or empty
  std::vector<float> q_norm, k_norm;         // (hd) or empty (Qwen3 only)
  PackedMatrix o;                            // [H, nh·hd]
  std::vector<float> o_bias;                 // (H) or empty
  PackedMatrix gate_up;                      // [2I, H], see pack_gate_up
  std::vector<float> gate_bias, up_bias;     // (I) or empty
  PackedMatrix down;                         // [H, I]
  std::vector<float> down_bias;              // (H) or empty

  // Bytes one single-token pass reads: the four matrices and every vector.
  std::size_t bytes() const;
};

// Norm weights and biases as the kernels take them: an fp32 copy, and nullptr for an absent one.
inline std::vector<float> to_vector(const Vector& v) { return std::vector<float>(v.data(), v.data() + v.size()); }
inline const float* or_null(const std::vector<float>& v) { return v.empty() ? nullptr : v.data(); }

// A layer's matrices by role, and rows [first, first + n) of one of them ([out, in] as stored) as
// fp32 into out.
enum class LayerMatrix { q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj };
using LayerRows = std::function<void(LayerMatrix which, int64_t first, int64_t n, float* out)>;
// Rows of the matrices: q (q_proj), kv (k_proj, v_proj), hidden (o_proj, down_proj),
// intermediate (gate_proj, up_proj); `in` is the width of the attention input (q/k/v's columns).
struct LayerShape {
  int q = 0, kv = 0, in = 0, hidden = 0, intermediate = 0;
};

// Packs a layer whose matrices come from `rows`, a chunk of rows at a time (about 1 MiB of fp32
// beside the packed layer), and whose norms and biases are those of `vectors` (its matrices are
// not read); `prefix` names its tensors in errors (e.g. "model.layers.3.").
PackedLayer pack_layer(const LayerShape& shape, const LayerRows& rows, const LayerWeights& vectors, Dtype precision,
                       const std::string& prefix);
// The same for weights in memory (shapes already checked).
PackedLayer pack_layer(const LayerWeights& w, Dtype precision, const std::string& prefix);

// RMSNorm of each of `rows` rows of x (width n) into y, as the reference's ops::rms_norm.
void rms_norm_rows(const float* x, float* y, int rows, int n, const std::vector<float>& w, double eps);

// Work buffers of decoder_layer, grown on demand and reused across layers.
struct LayerScratch {
  std::vector<float> qkv, attn, xn, act;
};

// One sequence of a (batched) layer: its new tokens, appended to its own cache, and the tokens
// whose residual rows the layer updates.
struct LayerSequence {
  CpuKVCache* cache = nullptr;
  const TokenBlock* block = nullptr;  // its T_i new tokens, at the block's slots of `cache`
  std::vector<int> rows;              // ascending indices into the block; n_i = rows.size()
};

// One layer on the new tokens of every sequence, each weight read once for all of them.
// attn_in: (ΣT_i, w.qkv.cols()) the attention input of every new token, sequence by sequence;
// their keys and values go into each sequence's cache at its block's slots for `layer`, and each
// sequence attends over its own cache under its own mask. x: (Σn_i, H) the residual stream of
// each sequence's `rows`, sequence by sequence, updated in place: x += o_proj(attention), then
// x += down(swiglu(gate, up)(post_norm(x))). Every row is computed as if alone (batch-invariant
// kernels), so one sequence's results do not depend on the others.
void decoder_layer(const PackedLayer& w, const ModelConfig& c, const Rope& rope, const float* attn_in, int layer,
                   const std::vector<LayerSequence>& seqs, float* x, LayerScratch& s);

}  // namespace specdec::cpu
