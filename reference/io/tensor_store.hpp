#pragma once
// The tensors of a model directory: a single `model.safetensors`, or shards listed by
// `model.safetensors.index.json` ({"metadata": {"total_size"}, "weight_map": {tensor: file}}).
// Readers ask for a tensor with the shape they expect; a mismatch is an error naming the tensor,
// the file, and both shapes.
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "reference/core/tensor.hpp"
#include "reference/io/safetensors.hpp"

namespace specdec {

class TensorStore {
 public:
  // `path` is a directory (model.safetensors is preferred over the index when both exist, as
  // Hugging Face does), a .safetensors file, or a .safetensors.index.json file. Every shard is
  // opened and checked against the index up front.
  explicit TensorStore(const std::filesystem::path& path);

  // What was opened: the directory, or the file if a file was given.
  const std::filesystem::path& source() const { return source_; }
  bool has(const std::string& name) const { return where_.count(name) != 0; }
  // All tensor names, sorted.
  std::vector<std::string> names() const;
  const TensorInfo& info(const std::string& name) const;
  // The file that holds the tensor.
  const std::filesystem::path& file_of(const std::string& name) const;

  // A rank-2 tensor of shape [rows, cols], converted to float32.
  Matrix matrix(const std::string& name, int64_t rows, int64_t cols) const;
  // A rank-1 tensor of shape [n], converted to float32.
  Vector vector(const std::string& name, int64_t n) const;
  // n values stored with any number of leading 1-dimensions ([n], [1, n], [1, 1, n], ...).
  Vector flat_vector(const std::string& name, int64_t n) const;
  // A rank-1 integer or BOOL tensor of shape [n], as int64.
  std::vector<int64_t> int64s(const std::string& name, int64_t n) const;
  // Any float tensor, flattened, without a shape check (see info() for the shape).
  std::vector<float> floats(const std::string& name) const;
  // Elements [first, first + out.size()) of a float tensor, flattened, into out.
  void floats_into(const std::string& name, uint64_t first, std::span<float> out) const;
  // Gives back the resident pages of the tensor's bytes in its mapped file.
  void release(const std::string& name) const noexcept;

 private:
  const SafetensorsFile& file(const std::string& name) const;
  void check_shape(const std::string& name, const std::vector<int64_t>& expected) const;
  void add_file(const std::filesystem::path& path);

  std::filesystem::path source_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, std::size_t> where_;  // tensor name -> index into files_
};

}  // namespace specdec
