#pragma once
// The safetensors format: u64 little-endian header length N, N bytes of JSON header
// {name: {"dtype", "shape", "data_offsets": [begin, end)}, "__metadata__": {str: str}}, then the
// raw row-major little-endian data; offsets are relative to the start of the data section.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "reference/io/mapped_file.hpp"

namespace specdec {

enum class Dtype { BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64 };

// Bytes per element.
std::size_t dtype_size(Dtype dtype);
// The header spelling ("F32", "BF16", ...).
std::string dtype_name(Dtype dtype);
// Parses a header spelling; `where` names the file and tensor for the error message.
Dtype parse_dtype(std::string_view name, const std::string& where);
bool is_float_dtype(Dtype dtype);    // F8_E5M2, F8_E4M3, F16, BF16, F32, F64
bool is_integer_dtype(Dtype dtype);  // BOOL and the signed / unsigned integers
// "[2, 3]"
std::string shape_string(const std::vector<int64_t>& shape);

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte range [begin, end) relative to the data section
  uint64_t end = 0;

  int64_t numel() const;
};

// A read-only view of one safetensors file. The whole header is validated on open; tensor data
// is memory-mapped and converted on request.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::filesystem::path& path);
  SafetensorsFile(SafetensorsFile&& other) noexcept = default;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept = default;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // All tensors, sorted by name.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool has(const std::string& name) const { return index_.count(name) != 0; }
  // Throws if absent, naming the tensor and the file.
  const TensorInfo& info(const std::string& name) const;

  // The tensor's elements converted to float32 (from F32, F16, BF16, F64, F8_E5M2, F8_E4M3).
  std::vector<float> floats(const std::string& name) const;
  // Elements [first, first + out.size()) of the tensor, converted as floats() does, into out.
  void floats_into(const std::string& name, uint64_t first, std::span<float> out) const;
  // Gives back the resident pages of the tensor's bytes (mapped_file.hpp); later reads still work.
  void release(const std::string& name) const noexcept;
  // The tensor's elements converted to int64 (from BOOL, U8, I8, I16, U16, I32, U32, I64, U64;
  // a U64 value beyond the int64 range is an error).
  std::vector<int64_t> int64s(const std::string& name) const;
  // The stored bytes, valid while this object lives.
  std::span<const std::byte> raw(const std::string& name) const;

 private:
  std::filesystem::path path_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, std::size_t> index_;
  std::map<std::string, std::string> metadata_;
  MappedFile mapped_;            // the whole file
  std::size_t data_start_ = 0;  // 8 + header length
};

// Builds a safetensors file in memory (already converted to the stored dtype) and writes it.
// Tensors are stored in the order added; the header is padded with spaces to a multiple of 8
// bytes so the data section is 8-byte aligned.
class SafetensorsWriter {
 public:
  // Stores `values` (numel(shape) of them) as F32, F16, BF16 or F64 (rounded to nearest even).
  void add_floats(const std::string& name, Dtype dtype, const std::vector<int64_t>& shape,
                  std::span<const float> values);
  // Stores `values` as an integer dtype or BOOL; a value the dtype cannot hold is an error.
  void add_int64s(const std::string& name, Dtype dtype, const std::vector<int64_t>& shape,
                  std::span<const int64_t> values);
  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }

  bool has(const std::string& name) const;
  // Bytes of tensor data added so far (the file is this plus the header).
  std::size_t data_bytes() const { return data_.size(); }
  // Writes the file atomically (temporary file in the same directory, then rename).
  void write(const std::filesystem::path& path) const;

 private:
  void add_info(const std::string& name, Dtype dtype, const std::vector<int64_t>& shape,
                std::size_t count);

  std::vector<TensorInfo> tensors_;
  std::vector<std::byte> data_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace specdec
