#pragma once
// Writes GGUF v3 files for tests: metadata of every value type, tensors of any ggml type from
// their stored bytes, and deliberately broken files (raw edits of the bytes). The real-world
// writer (the `gguf` Python package) is exercised by the cross-library tests.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace specdec::testing {

class GgufWriter {
 public:
  // Value types (GgufType).
  enum : uint32_t { U8 = 0, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 };

  void kv_u32(const std::string& key, uint32_t v) { key_type(key, U32); put(v); ++n_kv_; }
  void kv_i32(const std::string& key, int32_t v) { key_type(key, I32); put(v); ++n_kv_; }
  void kv_u64(const std::string& key, uint64_t v) { key_type(key, U64); put(v); ++n_kv_; }
  void kv_f32(const std::string& key, float v) { key_type(key, F32); put(v); ++n_kv_; }
  void kv_bool(const std::string& key, bool v) { key_type(key, BOOL); put(static_cast<uint8_t>(v)); ++n_kv_; }
  void kv_string(const std::string& key, const std::string& v) { key_type(key, STRING); str(meta_, v); ++n_kv_; }
  void kv_strings(const std::string& key, const std::vector<std::string>& v) {
    key_type(key, ARRAY);
    put(static_cast<uint32_t>(STRING));
    put(static_cast<uint64_t>(v.size()));
    for (const std::string& s : v) str(meta_, s);
    ++n_kv_;
  }
  void kv_i32s(const std::string& key, const std::vector<int32_t>& v) {
    key_type(key, ARRAY);
    put(static_cast<uint32_t>(I32));
    put(static_cast<uint64_t>(v.size()));
    for (int32_t x : v) put(x);
    ++n_kv_;
  }
  void kv_f32s(const std::string& key, const std::vector<float>& v) {
    key_type(key, ARRAY);
    put(static_cast<uint32_t>(F32));
    put(static_cast<uint64_t>(v.size()));
    for (float x : v) put(x);
    ++n_kv_;
  }
  // Any bytes after the key (type and value), for malformed metadata.
  void kv_raw(const std::string& key, const std::string& type_and_value) {
    str(meta_, key);
    meta_ += type_and_value;
    ++n_kv_;
  }

  // A tensor of ggml type `type` with dimensions `ne` (ne[0] fastest) stored as `data`.
  void tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, std::string data) {
    tensors_.push_back({name, std::move(ne), type, std::move(data)});
  }
  // A float32 matrix [rows, cols] (row-major floats).
  void tensor_f32(const std::string& name, uint64_t rows, uint64_t cols, const float* values) {
    tensor(name, cols == 0 ? std::vector<uint64_t>{rows} : std::vector<uint64_t>{cols, rows}, 0,
           std::string(reinterpret_cast<const char*>(values), (cols == 0 ? rows : rows * cols) * 4));
  }

  std::string bytes(uint32_t version = 3, uint64_t alignment = 32) const {
    std::string out = "GGUF";
    append(out, version);
    append(out, static_cast<uint64_t>(tensors_.size()));
    append(out, static_cast<uint64_t>(n_kv_));
    out += meta_;
    uint64_t offset = 0;
    std::vector<uint64_t> offsets;
    for (const Tensor& t : tensors_) {
      str(out, t.name);
      append(out, static_cast<uint32_t>(t.ne.size()));
      for (uint64_t d : t.ne) append(out, d);
      append(out, t.type);
      append(out, offset);
      offsets.push_back(offset);
      offset += (t.data.size() + alignment - 1) / alignment * alignment;
    }
    out.resize((out.size() + alignment - 1) / alignment * alignment, '\0');
    const std::size_t data_start = out.size();
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      out.resize(data_start + offsets[i], '\0');
      out += tensors_[i].data;
    }
    return out;
  }
  void write(const std::filesystem::path& path, uint32_t version = 3) const {
    std::ofstream(path, std::ios::binary) << bytes(version);
  }

  template <typename T>
  static void append(std::string& out, T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.append(b, sizeof(T));
  }
  static void str(std::string& out, const std::string& s) {
    append(out, static_cast<uint64_t>(s.size()));
    out += s;
  }

 private:
  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type;
    std::string data;
  };
  template <typename T>
  void put(T v) { append(meta_, v); }
  void key_type(const std::string& key, uint32_t type) {
    str(meta_, key);
    put(type);
  }

  std::string meta_;
  uint64_t n_kv_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace specdec::testing
