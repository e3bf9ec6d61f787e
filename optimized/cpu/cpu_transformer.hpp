#pragma once
// The optimized CPU backend: the same Llama-family forward as reference/model/transformer, with
// weights kept in their stored precision (F32, BF16 or F16) and widened in registers, fp32
// accumulation, OpenMP over output features, and T verified tokens per weight read. Every output
// element keeps one fixed reduction order, so results do not depend on the thread count or on how
// many tokens are processed together (batch- and thread-count-invariant, bitwise).
//
// It is also bitwise equal to the reference Transformer given rounded_llama_weights(w, precision):
// every dot product, norm, RoPE rotation, softmax and residual add is the reference's operation
// sequence (see dot_kernels.hpp).
#include <cstddef>
#include <filesystem>
#include <memory>

#include "reference/io/safetensors.hpp"
#include "reference/model/language_model.hpp"
#include "reference/model/weights.hpp"

namespace specdec {
class CheckpointReader;
}

namespace specdec::cpu {

class PackedMatrix;

class CpuTransformer final : public LanguageModel {
 public:
  // Packs `weights` into `precision` (F32, BF16 or F16; rounding to nearest even when narrower).
  // The matrices (embeddings, projections, LM head) are packed; norm weights and biases (a few KB)
  // stay fp32 as given. Throws specdec::Error if the weights do not match the config, the precision
  // is unsupported, or a weight is beyond the F16 range.
  CpuTransformer(ModelConfig config, const LlamaWeights& weights, Dtype precision = Dtype::F32);
  // The same straight from a checkpoint, tensor after tensor: a layer's fp32 weights or a chunk of
  // an embedding's rows at a time beside the packed model, never the whole model in fp32.
  CpuTransformer(const CheckpointReader& reader, Dtype precision);
  ~CpuTransformer() override;

  const ModelConfig& config() const override;
  // A CpuKVCache (cpu_kv_cache.hpp).
  std::unique_ptr<KVCache> new_cache(int capacity) const override;
  // As Transformer::forward, with the same checks and messages; `cache` must come from new_cache
  // of a CpuTransformer of the same shape.
  ForwardResult forward(KVCache& cache, const ForwardRequest& request) const override;
  // Every entry in one pass per layer: each linear layer (and the LM head) reads its weights once
  // for the rows of all entries; RoPE, the KV writes and attention are per entry, on its own cache
  // under its own mask. results[i] is bitwise forward(*batch[i].cache, *batch[i].request) (forward
  // is this with one entry). Every entry is checked, with forward's messages prefixed
  // "forward_batch: entry i: ", before any cache is touched.
  std::vector<ForwardResult> forward_batch(const std::vector<BatchEntry>& batch) const override;

  Dtype precision() const;
  // The packed token embeddings [V, H] and LM head [V, H] (the embeddings when tied): heads bound
  // to this target read them (cpu_eagle_head), so a run holds no other copy.
  const PackedMatrix& embeddings() const;
  const PackedMatrix& output_head() const;
  // Bytes of weights one forward step reads: every linear layer and norm, the LM head, and one
  // embedding row per token (the bandwidth-limit denominator for benchmarks).
  std::size_t weight_bytes_per_step() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The fp32 weights with which the reference Transformer computes bitwise what a CpuTransformer
// packed in `precision` computes: every matrix rounded to `precision`, norms and biases as given.
LlamaWeights rounded_llama_weights(const LlamaWeights& weights, Dtype precision);

// The precision a checkpoint's matrices are stored in: BF16 or F16 when every rank-2 float tensor
// has that dtype (a GGUF file: every matrix), else F32 (quantized GGUF tensors dequantize to it). `path` as for load_cpu_transformer.
Dtype stored_precision(const std::filesystem::path& path);

// Loads a Hugging Face Llama-family checkpoint (directory or .safetensors / index file), keeping
// the stored precision of its linear weights (F32, BF16 or F16): stored_precision(path). The
// result is bitwise equal to the reference Transformer loaded from the same checkpoint.
std::unique_ptr<CpuTransformer> load_cpu_transformer(const std::filesystem::path& path);
// The same, packed into `precision` (F32, BF16 or F16) whatever the stored dtype, rounding to
// nearest even when narrower (e.g. an F32 checkpoint run in BF16).
std::unique_ptr<CpuTransformer> load_cpu_transformer(const std::filesystem::path& path, Dtype precision);

}  // namespace specdec::cpu
