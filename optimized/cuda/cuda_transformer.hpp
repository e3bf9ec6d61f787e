#pragma once
// The CUDA backend's target model: the same Llama-family forward as reference/model/transformer,
// run as the kernels of kernels/ on a device behind the DeviceRuntime seam (a GPU, or the CPU grid
// emulator). Weights are uploaded once in their stored precision (F32, BF16 or F16; norms and
// biases fp32); the KV cache lives on the device; a draft tree is verified in one forward with its
// mask; only the requested logit rows and hidden states come back to the host.
//
// Bitwise equal to the reference Transformer given the same weights with the matrices rounded to
// the precision (cpu::rounded_llama_weights does exactly that), for every request: every kernel
// follows the exactness contract (docs/exactness.md), and every output row keeps one reduction
// order whatever T is, so T verified tokens equal T one-token forwards.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "optimized/cuda/device_runtime.hpp"
#include "reference/io/safetensors.hpp"
#include "reference/model/language_model.hpp"
#include "reference/model/weights.hpp"

namespace specdec {
class CheckpointReader;
}

namespace specdec::cuda {

class CudaTransformer final : public LanguageModel {
 public:
  // Uploads `weights` with the matrices in `precision` (F32, BF16 or F16, rounding to nearest even
  // when narrower). Throws specdec::Error if the weights do not match the config, the precision is
  // unsupported, a weight is beyond the F16 range, or the device is out of memory.
  CudaTransformer(std::shared_ptr<DeviceRuntime> runtime, ModelConfig config, const LlamaWeights& weights,
                  Dtype precision = Dtype::F32);
  // The same straight from a checkpoint, tensor after tensor: host memory holds one layer's or one
  // embedding's fp32 weights at a time, never the whole model.
  CudaTransformer(std::shared_ptr<DeviceRuntime> runtime, const CheckpointReader& reader, Dtype precision);
  // A model of `config`'s shape whose weights are pseudo-random, generated straight into
  // `precision` on the device (random_matrix; norms 1, biases 0): for benchmarks at real model
  // sizes, where the fp32 weights the other constructor takes would not fit on the host.
  static std::unique_ptr<CudaTransformer> random(std::shared_ptr<DeviceRuntime> runtime, ModelConfig config,
                                                 Dtype precision, uint64_t seed);
  ~CudaTransformer() override;

  const ModelConfig& config() const override;
  // A CudaKVCache on this model's device.
  std::unique_ptr<KVCache> new_cache(int capacity) const override;
  // As Transformer::forward, with the same checks and messages; `cache` must come from new_cache
  // of a CudaTransformer of the same shape. Not safe to call from two threads at once. A batch of
  // one: the same code as forward_batch.
  ForwardResult forward(KVCache& cache, const ForwardRequest& request) const override;
  // One pass for every sequence of the batch: each layer's linears read their weights once for the
  // rows of all entries, each row attends over its own entry's cache under its own mask, so
  // results[i] is bitwise forward(*batch[i].cache, *batch[i].request). Every entry is checked
  // (forward's messages, prefixed "forward_batch: entry i: ") before any cache is touched.
  std::vector<ForwardResult> forward_batch(const std::vector<BatchEntry>& batch) const override;

  Dtype precision() const;
  DeviceRuntime& runtime() const;
  // Bytes of weights one forward step reads (as CpuTransformer::weight_bytes_per_step).
  std::size_t weight_bytes_per_step() const;

 private:
  struct Impl;
  explicit CudaTransformer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Loads a Hugging Face Llama-family checkpoint onto `runtime`'s device, keeping the stored
// precision of its linear weights (as load_cpu_transformer), or in `precision`.
std::unique_ptr<CudaTransformer> load_cuda_transformer(std::shared_ptr<DeviceRuntime> runtime,
                                                       const std::filesystem::path& path);
std::unique_ptr<CudaTransformer> load_cuda_transformer(std::shared_ptr<DeviceRuntime> runtime,
                                                       const std::filesystem::path& path, Dtype precision);

}  // namespace specdec::cuda
