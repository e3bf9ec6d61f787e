#pragma once
// The weights of a Llama-family checkpoint under their Hugging Face names
// ("model.embed_tokens.weight", "model.layers.3.mlp.up_proj.weight", "lm_head.weight"), whatever
// holds them: a safetensors directory, file or shard index (names with or without the "model."
// prefix), or a GGUF file (llama.cpp's names and q/k row order, gguf_checkpoint.hpp). Rows come
// converted to fp32 on request, straight into the caller's memory, and a tensor's file pages can
// be given back once read: a loader that converts tensor after tensor into its own layout holds
// one copy of the weights, its own, never the file's pages or a whole-model temporary beside it.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "reference/core/tensor.hpp"
#include "reference/model/model_config.hpp"

namespace specdec {

class CheckpointReader {
 public:
  // Opens the files and reads the config (config.json and generation_config.json beside the
  // weights, or the GGUF metadata); a num_hidden_layers the tensors cannot hold is refused here.
  explicit CheckpointReader(const std::filesystem::path& path);
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  const std::filesystem::path& path() const;
  const ModelConfig& config() const;
  bool has(const std::string& name) const;

  // Throws unless the tensor is present with shape [rows, cols] (cols = 0: a vector of `rows`
  // elements), naming the file, the tensor as the file names it, and both shapes. `hint` follows
  // the missing-tensor message.
  void check_shape(const std::string& name, int64_t rows, int64_t cols, const std::string& hint = "") const;
  // Rows [first, first + n) of the matrix `name` (cols elements each; shape checked by the caller)
  // as fp32 into out (n·cols floats, row-major).
  void read_rows(const std::string& name, int64_t first, int64_t n, float* out) const;
  // Gives back the resident pages of the tensor's bytes; later reads fault them in again.
  void release(const std::string& name) const noexcept;

  // Whole tensors, shape checked, converted straight into place, pages released.
  Matrix matrix(const std::string& name, int64_t rows, int64_t cols) const;
  Vector vector(const std::string& name, int64_t n) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace specdec
