#include "reference/io/gguf.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "reference/core/error.hpp"
#include "reference/io/mapped_file.hpp"

namespace specdec {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;              // GGML_MAX_DIMS
constexpr uint64_t kMaxEntries = 1u << 20;    // metadata keys, tensors: real models have < 10^4
constexpr uint64_t kMaxKeyBytes = 1u << 16;   // a key or tensor name
constexpr int kMaxArrayNesting = 8;

// Bytes of one scalar of a metadata type; 0 for STRING and ARRAY.
std::size_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::BOOL: return 1;
    case GgufType::U16: case GgufType::I16: return 2;
    case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
    case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
    default: return 0;
  }
}

bool valid_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::F64); }

// Reads the file front to back; every read is bounds-checked against the mapping.
class Cursor {
 public:
  Cursor(const std::byte* data, std::size_t size, const std::string& file) : p_(data), size_(size), file_(file) {}

  std::size_t pos() const { return pos_; }
  std::size_t left() const { return size_ - pos_; }
  const std::byte* here() const { return p_ + pos_; }

  void need(uint64_t n, const std::string& what) const {
    if (n > left()) {
      throw Error(file_ + ": " + what + " needs " + std::to_string(n) + " bytes at offset " + std::to_string(pos_) +
                  " but the file has " + std::to_string(left()) + " left (truncated or not a GGUF file?)");
    }
  }
  template <typename T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  void skip(uint64_t n, const std::string& what) {
    need(n, what);
    pos_ += static_cast<std::size_t>(n);
  }
  std::string string(const std::string& what, uint64_t max_bytes = std::numeric_limits<uint64_t>::max()) {
    const uint64_t n = read<uint64_t>(what + " length");
    if (n > max_bytes) {
      throw Error(file_ + ": " + what + " is " + std::to_string(n) + " bytes long, more than the " +
                  std::to_string(max_bytes) + " allowed");
    }
    need(n, what);
    std::string s(reinterpret_cast<const char*>(p_ + pos_), static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }

 private:
  const std::byte* p_;
  std::size_t size_;
  std::size_t pos_ = 0;
  const std::string& file_;
};

// Skips one array's elements (after its type and count), returning their bytes.
std::span<const std::byte> skip_elements(Cursor& c, GgufType element, uint64_t count, const std::string& where,
                                         int depth) {
  const std::byte* begin = c.here();
  const std::size_t start = c.pos();
  if (const std::size_t size = scalar_size(element)) {
    if (count > c.left() / size) {
      throw Error(where + ": array of " + std::to_string(count) + " " + gguf_type_name(element) +
                  " runs past the end of the file");
    }
    c.skip(count * size, where);
  } else if (element == GgufType::STRING) {
    // Every string takes at least its 8-byte length, so a count beyond left()/8 cannot fit.
    if (count > c.left() / 8) throw Error(where + ": array of " + std::to_string(count) + " strings runs past the end of the file");
    for (uint64_t k = 0; k < count; ++k) {
      const uint64_t n = c.read<uint64_t>(where + " string length");
      c.skip(n, where + " string " + std::to_string(k));
    }
  } else {  // ARRAY of arrays
    if (depth >= kMaxArrayNesting) throw Error(where + ": arrays nested more than " + std::to_string(kMaxArrayNesting) + " deep");
    if (count > c.left() / 12) throw Error(where + ": array of " + std::to_string(count) + " arrays runs past the end of the file");
    for (uint64_t k = 0; k < count; ++k) {
      const uint32_t t = c.read<uint32_t>(where + " element type");
      if (!valid_type(t)) throw Error(where + ": unknown metadata value type " + std::to_string(t));
      const uint64_t n = c.read<uint64_t>(where + " element count");
      skip_elements(c, static_cast<GgufType>(t), n, where, depth + 1);
    }
  }
  return {begin, c.pos() - start};
}

GgufValue read_value(Cursor& c, GgufType type, const std::string& where) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufType::U8: v.u = c.read<uint8_t>(where); break;
    case GgufType::U16: v.u = c.read<uint16_t>(where); break;
    case GgufType::U32: v.u = c.read<uint32_t>(where); break;
    case GgufType::U64: v.u = c.read<uint64_t>(where); break;
    case GgufType::I8: v.i = c.read<int8_t>(where); break;
    case GgufType::I16: v.i = c.read<int16_t>(where); break;
    case GgufType::I32: v.i = c.read<int32_t>(where); break;
    case GgufType::I64: v.i = c.read<int64_t>(where); break;
    case GgufType::F32: v.f = c.read<float>(where); break;
    case GgufType::F64: v.f = c.read<double>(where); break;
    case GgufType::BOOL: {
      const uint8_t b = c.read<uint8_t>(where);
      if (b > 1) throw Error(where + ": a BOOL must be 0 or 1, got " + std::to_string(b));
      v.i = b;
      break;
    }
    case GgufType::STRING: v.s = c.string(where); break;
    case GgufType::ARRAY: {
      const uint32_t t = c.read<uint32_t>(where + " element type");
      if (!valid_type(t)) throw Error(where + ": unknown array element type " + std::to_string(t));
      v.element_type = static_cast<GgufType>(t);
      v.count = c.read<uint64_t>(where + " element count");
      v.elements = skip_elements(c, v.element_type, v.count, where, 1);
      break;
    }
  }
  return v;
}

// Element k of a scalar array, as the scalar GgufValue it encodes.
GgufValue scalar_at(const GgufValue& a, uint64_t k) {
  const std::size_t size = scalar_size(a.element_type);
  Cursor c(a.elements.data() + k * size, size, "");
  return read_value(c, a.element_type, "array element");
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s.substr(0, 60)) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + (s.size() > 60 ? "...\"" : "\"");
}

std::string scalar_text(const GgufValue& v) {
  switch (v.type) {
    case GgufType::U8: case GgufType::U16: case GgufType::U32: case GgufType::U64: return std::to_string(v.u);
    case GgufType::I8: case GgufType::I16: case GgufType::I32: case GgufType::I64: return std::to_string(v.i);
    case GgufType::BOOL: return v.i ? "true" : "false";
    case GgufType::F32: case GgufType::F64: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", v.f);
      return buf;
    }
    case GgufType::STRING: return quoted(v.s);
    default: return "?";
  }
}

std::vector<std::string> decode_strings(const GgufValue& a) {
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(a.count));
  Cursor c(a.elements.data(), a.elements.size(), "");
  for (uint64_t k = 0; k < a.count; ++k) out.push_back(c.string("string"));
  return out;
}

}  // namespace

std::string gguf_type_name(GgufType t) {
  static const char* names[] = {"U8", "I8", "U16", "I16", "U32", "I32", "F32", "BOOL", "STRING", "ARRAY", "U64", "I64", "F64"};
  const auto k = static_cast<uint32_t>(t);
  return k < std::size(names) ? names[k] : "type " + std::to_string(k);
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufType::U8: case GgufType::U16: case GgufType::U32: case GgufType::U64:
    case GgufType::I8: case GgufType::I16: case GgufType::I32: case GgufType::I64: return true;
    default: return false;
  }
}

std::string GgufValue::summary() const {
  if (type != GgufType::ARRAY) return scalar_text(*this);
  // Appended piecewise: GCC 12 warns falsely (-Wrestrict) on chained temporaries.
  std::string s = "[";
  s += std::to_string(count);
  s += " x ";
  s += gguf_type_name(element_type);
  s += "]";
  if (element_type == GgufType::ARRAY || count == 0) return s;
  const uint64_t shown = std::min<uint64_t>(count, 4);
  s += " ";
  if (element_type == GgufType::STRING) {
    Cursor c(elements.data(), elements.size(), "");
    for (uint64_t k = 0; k < shown; ++k) {
      if (k) s += ", ";
      s += quoted(c.string("string"));
    }
  } else {
    for (uint64_t k = 0; k < shown; ++k) {
      if (k) s += ", ";
      s += scalar_text(scalar_at(*this, k));
    }
  }
  if (count > shown) s += ", ...";
  return s;
}

uint64_t GgufTensorInfo::numel() const {
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;
  return n;
}

std::vector<int64_t> GgufTensorInfo::shape() const {
  return std::vector<int64_t>(ne.rbegin(), ne.rend());
}

GgufFile::GgufFile(const std::filesystem::path& path)
    : path_(path), mapped_(path, "GGUF file", 24, "a GGUF header (24)") {
  const std::string file = path.string();
  const std::size_t map_size = mapped_.size();
  {  // on a throw, mapped_ unmaps the file
    Cursor c(mapped_.data(), map_size, file);
    if (c.read<uint32_t>("magic") != kMagic) throw Error(file + ": not a GGUF file (it does not start with \"GGUF\")");
    version_ = c.read<uint32_t>("version");
    if (version_ != 2 && version_ != 3) {
      throw Error(file + ": GGUF version " + std::to_string(version_) + " is not supported (specdec reads versions 2 and 3)");
    }
    const uint64_t n_tensors = c.read<uint64_t>("tensor count");
    const uint64_t n_kv = c.read<uint64_t>("metadata count");
    if (n_tensors > kMaxEntries || n_kv > kMaxEntries) {
      throw Error(file + ": " + std::to_string(n_tensors) + " tensors and " + std::to_string(n_kv) +
                  " metadata keys; at most " + std::to_string(kMaxEntries) + " of each are read");
    }

    for (uint64_t k = 0; k < n_kv; ++k) {
      const std::string key = c.string("metadata key " + std::to_string(k), kMaxKeyBytes);
      const std::string where = file + ": metadata '" + key + "'";
      const uint32_t t = c.read<uint32_t>(where + " type");
      if (!valid_type(t)) throw Error(where + ": unknown value type " + std::to_string(t));
      GgufValue v = read_value(c, static_cast<GgufType>(t), where);
      if (!metadata_.emplace(key, std::move(v)).second) throw Error(file + ": metadata key '" + key + "' appears more than once");
    }

    uint64_t alignment = kDefaultAlignment;
    if (const GgufValue* a = find("general.alignment")) {
      if (!a->is_integer() || a->u == 0 || (a->u & (a->u - 1)) != 0 || a->u > (1u << 20)) {
        throw Error(file + ": general.alignment must be a power of two up to 2^20, got " + a->summary());
      }
      alignment = a->u;
    }

    for (uint64_t k = 0; k < n_tensors; ++k) {
      GgufTensorInfo t;
      t.name = c.string("tensor name " + std::to_string(k), kMaxKeyBytes);
      const std::string where = file + ": tensor '" + t.name + "'";
      const uint32_t n_dims = c.read<uint32_t>(where + " dimension count");
      if (n_dims == 0 || n_dims > kMaxDims) {
        throw Error(where + ": " + std::to_string(n_dims) + " dimensions (expected 1 to " + std::to_string(kMaxDims) + ")");
      }
      uint64_t numel = 1;
      for (uint32_t d = 0; d < n_dims; ++d) {
        const uint64_t dim = c.read<uint64_t>(where + " dimension");
        if (dim == 0 || dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
            numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / dim) {
          throw Error(where + ": dimension " + std::to_string(d) + " is " + std::to_string(dim) +
                      " (must be positive, with at most 2^63-1 elements in all)");
        }
        numel *= dim;
        t.ne.push_back(dim);
      }
      t.type = c.read<uint32_t>(where + " type");
      t.offset = c.read<uint64_t>(where + " offset");
      const auto traits = ggml_type_traits(t.type);
      if (!traits) throw Error(where + ": unknown ggml tensor type " + std::to_string(t.type));
      if (t.ne[0] % traits->block_size != 0) {
        throw Error(where + ": rows of " + std::to_string(t.ne[0]) + " elements are not whole " + traits->name +
                    " blocks of " + std::to_string(traits->block_size));
      }
      const uint64_t blocks = numel / traits->block_size;
      if (blocks > std::numeric_limits<uint64_t>::max() / traits->type_size) throw Error(where + ": size overflows");
      t.bytes = blocks * traits->type_size;
      if (t.offset % alignment != 0) {
        throw Error(where + ": data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                    std::to_string(alignment));
      }
      if (index_.count(t.name)) throw Error(file + ": tensor '" + t.name + "' appears more than once");
      index_[t.name] = tensors_.size();
      tensors_.push_back(std::move(t));
    }

    // The data section starts at the next multiple of the alignment.
    const uint64_t pad = (alignment - c.pos() % alignment) % alignment;
    if (pad > c.left()) {
      if (!tensors_.empty()) throw Error(file + ": the data section starts past the end of the file (truncated?)");
      data_start_ = map_size;
    } else {
      data_start_ = c.pos() + static_cast<std::size_t>(pad);
    }
    const uint64_t data_size = map_size - data_start_;
    std::vector<const GgufTensorInfo*> by_offset;
    for (const GgufTensorInfo& t : tensors_) {
      if (t.offset > data_size || t.bytes > data_size - t.offset) {
        throw Error(file + ": tensor '" + t.name + "' (" + std::to_string(t.bytes) + " bytes at data offset " +
                    std::to_string(t.offset) + ") runs past the end of the file (data section " +
                    std::to_string(data_size) + " bytes; truncated?)");
      }
      by_offset.push_back(&t);
    }
    std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    for (std::size_t i = 1; i < by_offset.size(); ++i) {
      if (by_offset[i]->offset < by_offset[i - 1]->offset + by_offset[i - 1]->bytes) {
        throw Error(file + ": tensors '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name + "' overlap in the data section");
      }
    }
  }
}

const GgufTensorInfo& GgufFile::tensor(const std::string& name) const {
  const auto it = index_.find(name);
  if (it == index_.end()) throw Error(path_.string() + ": no tensor named '" + name + "'");
  return tensors_[it->second];
}

const GgufValue* GgufFile::find(const std::string& key) const {
  const auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

namespace {

[[noreturn]] void wrong_type(const std::filesystem::path& file, const std::string& key, const std::string& expected,
                             const GgufValue& v) {
  throw Error(file.string() + ": metadata '" + key + "' must be " + expected + ", got " +
              (v.type == GgufType::ARRAY ? "an array of " + gguf_type_name(v.element_type) : gguf_type_name(v.type)) +
              " " + v.summary());
}

// An integer value as int64, or nullopt when it does not fit.
std::optional<int64_t> as_int(const GgufValue& v) {
  switch (v.type) {
    case GgufType::U8: case GgufType::U16: case GgufType::U32: case GgufType::U64:
      if (v.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(v.u);
    default: return v.i;
  }
}

}  // namespace

std::optional<std::string> GgufFile::get_string(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::STRING) wrong_type(path_, key, "a string", *v);
  return v->s;
}

std::optional<int64_t> GgufFile::get_int(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_integer()) wrong_type(path_, key, "an integer", *v);
  const auto i = as_int(*v);
  if (!i) wrong_type(path_, key, "an integer below 2^63", *v);
  return i;
}

std::optional<double> GgufFile::get_float(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_float()) return v->f;
  if (v->is_integer()) return v->type == GgufType::U8 || v->type == GgufType::U16 || v->type == GgufType::U32 ||
                                      v->type == GgufType::U64
                                  ? static_cast<double>(v->u)
                                  : static_cast<double>(v->i);
  wrong_type(path_, key, "a number", *v);
}

std::optional<bool> GgufFile::get_bool(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::BOOL) wrong_type(path_, key, "a BOOL", *v);
  return v->i != 0;
}

std::optional<std::vector<std::string>> GgufFile::get_strings(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::ARRAY || v->element_type != GgufType::STRING) wrong_type(path_, key, "an array of strings", *v);
  return decode_strings(*v);
}

std::optional<std::vector<double>> GgufFile::get_floats(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::ARRAY || (v->element_type != GgufType::F32 && v->element_type != GgufType::F64)) {
    wrong_type(path_, key, "an array of F32 or F64", *v);
  }
  std::vector<double> out(static_cast<std::size_t>(v->count));
  for (uint64_t k = 0; k < v->count; ++k) out[k] = scalar_at(*v, k).f;
  return out;
}

std::optional<std::vector<int64_t>> GgufFile::get_ints(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::ARRAY || scalar_size(v->element_type) == 0 || v->element_type == GgufType::F32 ||
      v->element_type == GgufType::F64 || v->element_type == GgufType::BOOL) {
    wrong_type(path_, key, "an array of integers", *v);
  }
  std::vector<int64_t> out(static_cast<std::size_t>(v->count));
  for (uint64_t k = 0; k < v->count; ++k) {
    const auto i = as_int(scalar_at(*v, k));
    if (!i) wrong_type(path_, key, "an array of integers below 2^63", *v);
    out[k] = *i;
  }
  return out;
}

std::span<const std::byte> GgufFile::raw(const std::string& name) const {
  const GgufTensorInfo& t = tensor(name);
  return {mapped_.data() + data_start_ + t.offset, static_cast<std::size_t>(t.bytes)};
}

void GgufFile::dequantize_into(const std::string& name, std::span<float> out) const {
  const GgufTensorInfo& t = tensor(name);
  if (out.size() != t.numel()) {
    throw Error(path_.string() + ": tensor '" + name + "' has " + std::to_string(t.numel()) + " elements, " +
                std::to_string(out.size()) + " were asked for");
  }
  try {
    ggml_dequantize(static_cast<GgmlType>(t.type), raw(name), out);
  } catch (const Error& e) {
    throw Error(path_.string() + ": tensor '" + name + "': " + e.what());
  }
}

void GgufFile::dequantize_rows_into(const std::string& name, uint64_t first_row, std::span<float> out) const {
  const GgufTensorInfo& t = tensor(name);
  const uint64_t cols = t.ne[0], rows = t.numel() / cols;
  const uint64_t n = out.size() / cols;
  if (out.size() % cols != 0 || first_row > rows || n > rows - first_row) {
    throw Error(path_.string() + ": tensor '" + name + "' has " + std::to_string(rows) + " rows of " + std::to_string(cols) +
                " elements; " + std::to_string(out.size()) + " elements from row " + std::to_string(first_row) +
                " were asked for");
  }
  const uint64_t row_bytes = t.bytes / rows;  // whole blocks per row (checked on open)
  try {
    ggml_dequantize(static_cast<GgmlType>(t.type), raw(name).subspan(first_row * row_bytes, n * row_bytes), out);
  } catch (const Error& e) {
    throw Error(path_.string() + ": tensor '" + name + "': " + e.what());
  }
}

void GgufFile::release(const std::string& name) const noexcept {
  const auto it = index_.find(name);
  if (it == index_.end()) return;
  const GgufTensorInfo& t = tensors_[it->second];
  mapped_.release(data_start_ + t.offset, static_cast<std::size_t>(t.bytes));
}

std::vector<float> GgufFile::floats(const std::string& name) const {
  std::vector<float> out(static_cast<std::size_t>(tensor(name).numel()));
  dequantize_into(name, out);
  return out;
}

bool is_gguf_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  uint32_t magic = 0;
  const bool ok = ::read(fd, &magic, 4) == 4 && magic == kMagic;
  ::close(fd);
  return ok;
}

}  // namespace specdec
