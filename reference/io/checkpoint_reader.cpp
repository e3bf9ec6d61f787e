#include "reference/io/checkpoint_reader.hpp"

#include <optional>
#include <span>
#include <vector>

#include "reference/core/error.hpp"
#include "reference/core/stream_buffer.hpp"
#include "reference/io/gguf.hpp"
#include "reference/io/gguf_checkpoint.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/io/tensor_store.hpp"

namespace specdec {

namespace fs = std::filesystem;

struct CheckpointReader::Impl {
  fs::path path;
  ModelConfig config;
  std::optional<TensorStore> store;  // safetensors
  std::optional<GgufFile> gguf;      // or a GGUF file
  std::string prefix = "model.";     // safetensors: "" for a bare LlamaModel's names
  bool interleaved = false;          // GGUF: q/k rows in llama.cpp's order

  // The tensor's name in the file; "" when the file cannot hold it.
  std::string stored(const std::string& name) const {
    if (gguf) return gguf_tensor_name(name);
    if (prefix.empty() && name.compare(0, 6, "model.") == 0) return name.substr(6);
    return name;
  }
  bool has(const std::string& name) const {
    const std::string s = stored(name);
    return !s.empty() && (gguf ? gguf->has_tensor(s) : store->has(s));
  }
  // A q/k weight or bias of a file whose rows the converter interleaved.
  bool permuted(const std::string& name) const {
    if (!interleaved) return false;
    for (const char* m : {".self_attn.q_proj.", ".self_attn.k_proj."})
      if (name.find(m) != std::string::npos) return true;
    return false;
  }
};

CheckpointReader::CheckpointReader(const fs::path& path) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.path = path;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error("checkpoint '" + path.string() + "' does not exist");
  m.config = load_checkpoint_config(path);
  const ModelConfig& c = m.config;
  if (is_gguf_file(path)) {
    m.gguf.emplace(path);
    m.interleaved = gguf_interleaved_rope(*m.gguf);
    // The last layer's tensors are looked for before anything is sized by block_count.
    const std::string last = "blk." + std::to_string(c.num_hidden_layers - 1) + ".attn_q.weight";
    if (!m.gguf->has_tensor(last)) {
      throw Error(path.string() + ": block_count is " + std::to_string(c.num_hidden_layers) + " but tensor '" + last +
                  "' is missing");
    }
    return;
  }
  m.store.emplace(path);
  // ForCausalLM checkpoints prefix the decoder with "model."; a bare LlamaModel does not.
  if (!m.store->has("model.embed_tokens.weight") && m.store->has("embed_tokens.weight")) m.prefix = "";
  // Each layer holds several tensors: a num_hidden_layers beyond the file's tensors is refused
  // before anything is sized by it.
  if (static_cast<std::size_t>(c.num_hidden_layers) > m.store->names().size()) {
    throw Error("checkpoint '" + path.string() + "': config.json has num_hidden_layers " + std::to_string(c.num_hidden_layers) +
                " but the weights hold only " + std::to_string(m.store->names().size()) + " tensors");
  }
}

CheckpointReader::~CheckpointReader() = default;

const fs::path& CheckpointReader::path() const { return impl_->path; }
const ModelConfig& CheckpointReader::config() const { return impl_->config; }
bool CheckpointReader::has(const std::string& name) const { return impl_->has(name); }

void CheckpointReader::check_shape(const std::string& name, int64_t rows, int64_t cols, const std::string& hint) const {
  const Impl& m = *impl_;
  const std::string s = m.stored(name);
  const std::vector<int64_t> want = cols > 0 ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{rows};
  if (m.gguf) {
    const std::string file = m.path.string();
    if (!m.has(name)) throw Error(file + ": missing tensor '" + (s.empty() ? name : s) + "'" + hint);
    const GgufTensorInfo& t = m.gguf->tensor(s);
    const bool ok = cols > 0 ? t.shape() == want : t.numel() == static_cast<uint64_t>(rows) && t.ne[0] == static_cast<uint64_t>(rows);
    if (!ok) {
      throw Error(file + ": tensor '" + s + "' has shape " + shape_string(t.shape()) + ", the metadata calls for " +
                  shape_string(want));
    }
    return;
  }
  if (!m.has(name)) throw Error("checkpoint '" + m.path.string() + "': missing tensor '" + s + "'" + hint);
  const TensorInfo& t = m.store->info(s);
  if (t.shape != want) {
    throw Error(m.store->file_of(s).string() + ": tensor '" + s + "' has shape " + shape_string(t.shape) + ", expected " +
                shape_string(want));
  }
}

void CheckpointReader::read_rows(const std::string& name, int64_t first, int64_t n, float* out) const {
  const Impl& m = *impl_;
  const std::string s = m.stored(name);
  if (m.gguf) {
    const GgufTensorInfo& t = m.gguf->tensor(s);
    const auto cols = static_cast<std::size_t>(t.ne[0]);
    if (!m.permuted(name)) {
      m.gguf->dequantize_rows_into(s, static_cast<uint64_t>(first), std::span<float>(out, static_cast<std::size_t>(n) * cols));
      return;
    }
    const auto hd = static_cast<int64_t>(m.config.head_dim);
    for (int64_t r = 0; r < n; ++r) {
      m.gguf->dequantize_rows_into(s, static_cast<uint64_t>(gguf_rope_source_row(first + r, hd)),
                                   std::span<float>(out + static_cast<std::size_t>(r) * cols, cols));
    }
    return;
  }
  const TensorInfo& t = m.store->info(s);
  const auto cols = static_cast<std::size_t>(t.shape.size() == 2 ? t.shape[1] : 1);
  m.store->floats_into(s, static_cast<uint64_t>(first) * cols, std::span<float>(out, static_cast<std::size_t>(n) * cols));
}

void CheckpointReader::release(const std::string& name) const noexcept {
  const Impl& m = *impl_;
  const std::string s = m.stored(name);
  if (s.empty()) return;
  if (m.gguf) {
    m.gguf->release(s);
  } else {
    m.store->release(s);
  }
}

Matrix CheckpointReader::matrix(const std::string& name, int64_t rows, int64_t cols) const {
  check_shape(name, rows, cols);
  Matrix out(rows, cols);  // row-major (tensor.hpp): rows of `cols` floats, as the files store them
  prefault_for_writing(out.data(), sizeof(float) * static_cast<std::size_t>(out.size()));
  read_rows(name, 0, rows, out.data());
  release(name);
  return out;
}

Vector CheckpointReader::vector(const std::string& name, int64_t n) const {
  check_shape(name, n, 0);
  const Impl& m = *impl_;
  const std::string s = m.stored(name);
  Vector out(n);
  if (m.gguf) {
    std::vector<float> v(static_cast<std::size_t>(n));
    m.gguf->dequantize_into(s, v);
    const auto hd = static_cast<int64_t>(m.config.head_dim);
    for (int64_t i = 0; i < n; ++i) out(i) = v[static_cast<std::size_t>(m.permuted(name) ? gguf_rope_source_row(i, hd) : i)];
  } else {
    m.store->floats_into(s, 0, std::span<float>(out.data(), static_cast<std::size_t>(n)));
  }
  release(name);
  return out;
}

}  // namespace specdec
