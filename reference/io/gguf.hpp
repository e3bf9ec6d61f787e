#pragma once
// The GGUF format (llama.cpp's model files), versions 2 and 3, little-endian:
//   u32 magic "GGUF", u32 version, u64 tensor_count, u64 metadata_kv_count,
//   metadata: {string key, u32 value_type, value}*,
//   tensor infos: {string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset}*,
//   padding to general.alignment (default 32), then the data section.
// A string is u64 length + bytes; an array is u32 element type + u64 count + elements. ne[0] is
// the fastest-varying dimension: a [rows, cols] matrix has ne = {cols, rows}. Offsets are relative
// to the data section and aligned.
//
// The whole file is validated on open (sizes bounded by the file, no overlaps, every tensor inside
// it); tensor data stays memory-mapped and is dequantized per tensor on request.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "reference/io/ggml_dequantize.hpp"
#include "reference/io/mapped_file.hpp"

namespace specdec {

// GGUF metadata value types.
enum class GgufType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7, STRING = 8, ARRAY = 9,
  U64 = 10, I64 = 11, F64 = 12,
};
std::string gguf_type_name(GgufType t);

// One metadata value: a scalar, a string, or an array. An array stays in the mapped file (a
// vocabulary of 150k strings costs nothing until read) and is decoded by GgufFile's getters;
// arrays of arrays are skipped over but not interpreted.
struct GgufValue {
  GgufType type = GgufType::U8;
  int64_t i = 0;       // signed integer types and BOOL
  uint64_t u = 0;      // unsigned integer types
  double f = 0;        // F32 (widened exactly) and F64
  std::string s;       // STRING
  GgufType element_type = GgufType::U8;  // ARRAY
  uint64_t count = 0;                     // ARRAY: number of elements
  std::span<const std::byte> elements;    // ARRAY: their encoding, inside the mapped file

  bool is_integer() const;
  bool is_float() const { return type == GgufType::F32 || type == GgufType::F64; }
  // The value as shown by `inspect`: arrays as "[n × TYPE]" with their first few elements.
  std::string summary() const;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> ne;  // ggml order: ne[0] fastest
  uint32_t type = 0;         // ggml_type id
  uint64_t offset = 0;       // relative to the data section
  uint64_t bytes = 0;

  uint64_t numel() const;
  // Row-major shape (outermost first), as safetensors and PyTorch write it: "[rows, cols]".
  std::vector<int64_t> shape() const;
};

class GgufFile {
 public:
  explicit GgufFile(const std::filesystem::path& path);
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  uint32_t version() const { return version_; }
  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  // Tensors in file order.
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  bool has_tensor(const std::string& name) const { return index_.count(name) != 0; }
  // Throws if absent, naming the tensor and the file.
  const GgufTensorInfo& tensor(const std::string& name) const;

  // Typed metadata lookups: nullopt when the key is absent, an Error naming the key, the file and
  // both types when it holds another type. Integers of any width convert when in range.
  const GgufValue* find(const std::string& key) const;
  std::optional<std::string> get_string(const std::string& key) const;
  std::optional<int64_t> get_int(const std::string& key) const;
  std::optional<double> get_float(const std::string& key) const;  // F32, F64 or an integer
  std::optional<bool> get_bool(const std::string& key) const;
  std::optional<std::vector<std::string>> get_strings(const std::string& key) const;
  std::optional<std::vector<double>> get_floats(const std::string& key) const;
  std::optional<std::vector<int64_t>> get_ints(const std::string& key) const;

  // The stored bytes of a tensor, valid while this object lives.
  std::span<const std::byte> raw(const std::string& name) const;
  // The tensor dequantized to float32, row-major (see ggml_dequantize).
  std::vector<float> floats(const std::string& name) const;
  // Rows [first_row, first_row + out.size() / ne[0]) of the tensor (rows of ne[0] elements, whole
  // blocks each), dequantized as dequantize_into does, into out.
  void dequantize_rows_into(const std::string& name, uint64_t first_row, std::span<float> out) const;
  // Gives back the resident pages of the tensor's bytes (mapped_file.hpp); later reads still work.
  void release(const std::string& name) const noexcept;
  // Dequantizes into `out` (numel() floats), without an intermediate copy.
  void dequantize_into(const std::string& name, std::span<float> out) const;

 private:
  std::filesystem::path path_;
  uint32_t version_ = 0;
  std::map<std::string, GgufValue> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, std::size_t> index_;
  MappedFile mapped_;  // the whole file
  std::size_t data_start_ = 0;
};

// True when `path` names a GGUF file: a regular file whose first four bytes are "GGUF".
bool is_gguf_file(const std::filesystem::path& path);

}  // namespace specdec
