#include "reference/io/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "reference/core/error.hpp"
#include "reference/io/mapped_file.hpp"
#include "reference/core/half.hpp"
#include "reference/io/atomic_file.hpp"
#include "reference/io/json_input.hpp"

namespace specdec {

// The format is little-endian; reading it by memcpy assumes the host is too.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

using nlohmann::json;

struct DtypeEntry {
  Dtype dtype;
  const char* name;
  std::size_t size;
};

constexpr DtypeEntry kDtypes[] = {
    {Dtype::BOOL, "BOOL", 1}, {Dtype::U8, "U8", 1},   {Dtype::I8, "I8", 1},
    {Dtype::F8_E5M2, "F8_E5M2", 1}, {Dtype::F8_E4M3, "F8_E4M3", 1}, {Dtype::I16, "I16", 2},
    {Dtype::U16, "U16", 2},   {Dtype::F16, "F16", 2}, {Dtype::BF16, "BF16", 2},
    {Dtype::I32, "I32", 4},   {Dtype::U32, "U32", 4}, {Dtype::F32, "F32", 4},
    {Dtype::F64, "F64", 8},   {Dtype::I64, "I64", 8}, {Dtype::U64, "U64", 8},
};

const DtypeEntry& entry(Dtype dtype) {
  for (const DtypeEntry& e : kDtypes) {
    if (e.dtype == dtype) return e;
  }
  throw Error("invalid dtype value " + std::to_string(static_cast<int>(dtype)));
}

template <typename T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// E4M3 "FN" (as torch.float8_e4m3fn): bias 7, no infinities, S.1111.111 is NaN.
float f8_e4m3_to_float(uint8_t b) {
  const float sign = (b & 0x80u) ? -1.0f : 1.0f;
  const int exponent = (b >> 3) & 0xf;
  const int mantissa = b & 0x7;
  if (exponent == 0xf && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);
  return sign * std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
}

// Parses the header with duplicate-key detection: nlohmann::json would silently keep one value.
json parse_header(std::string_view text, const std::string& file) {
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  auto callback = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case json::parse_event_t::key:
        if (!open_objects.empty() && !open_objects.back().insert(parsed.get<std::string>()).second &&
            duplicate.empty()) {
          duplicate = parsed.get<std::string>();
        }
        break;
      default:
        break;
    }
    return true;
  };
  check_json_depth(text, file + ": safetensors header");
  json header;
  try {
    header = json::parse(text.begin(), text.end(), callback);
  } catch (const json::exception& e) {
    throw Error(file + ": safetensors header is not valid JSON: " + e.what());
  }
  if (!duplicate.empty()) {
    throw Error(file + ": safetensors header has the key '" + duplicate + "' more than once");
  }
  if (!header.is_object()) {
    throw Error(file + ": safetensors header must be a JSON object, got " + std::string(header.type_name()));
  }
  return header;
}

uint64_t json_u64(const json& v, const std::string& what) {
  if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0)) {
    throw Error(what + " must be a non-negative integer, got " + v.dump());
  }
  return v.get<uint64_t>();
}

TensorInfo parse_tensor_entry(const std::string& name, const json& e, uint64_t data_size,
                              const std::string& file) {
  const std::string where = file + ": tensor '" + name + "'";
  if (!e.is_object()) throw Error(where + ": header entry must be an object, got " + e.dump());
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!e.contains(key)) throw Error(where + ": header entry is missing '" + key + "'");
  }
  TensorInfo t;
  t.name = name;
  const json& dtype = e.at("dtype");
  if (!dtype.is_string()) throw Error(where + ": 'dtype' must be a string, got " + dtype.dump());
  t.dtype = parse_dtype(dtype.get<std::string>(), where);

  const json& shape = e.at("shape");
  if (!shape.is_array()) throw Error(where + ": 'shape' must be a list of integers, got " + shape.dump());
  uint64_t numel = 1;
  bool overflow = false;
  for (const json& d : shape) {
    const uint64_t dim = json_u64(d, where + ": 'shape' entry");
    if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
    t.shape.push_back(static_cast<int64_t>(dim));
    if (dim != 0 && numel > std::numeric_limits<uint64_t>::max() / dim) overflow = true;
    numel *= dim;
  }

  const json& offsets = e.at("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2) {
    throw Error(where + ": 'data_offsets' must be a list [begin, end], got " + offsets.dump());
  }
  t.begin = json_u64(offsets.at(0), where + ": 'data_offsets' begin");
  t.end = json_u64(offsets.at(1), where + ": 'data_offsets' end");
  if (t.begin > t.end) {
    throw Error(where + ": data_offsets begin " + std::to_string(t.begin) + " is after end " + std::to_string(t.end));
  }
  if (t.end > data_size) {
    throw Error(where + ": data_offsets end " + std::to_string(t.end) + " is beyond the data section (" +
                std::to_string(data_size) + " bytes; file truncated?)");
  }
  const std::size_t elem = dtype_size(t.dtype);
  if (overflow || numel > std::numeric_limits<uint64_t>::max() / elem || numel * elem != t.end - t.begin) {
    throw Error(where + ": data_offsets cover " + std::to_string(t.end - t.begin) + " bytes but shape " +
                shape_string(t.shape) + " of " + dtype_name(t.dtype) + " needs " +
                (overflow ? std::string("an impossible number of") : std::to_string(numel * elem)) + " bytes");
  }
  return t;
}

}  // namespace

std::size_t dtype_size(Dtype dtype) { return entry(dtype).size; }

std::string dtype_name(Dtype dtype) { return entry(dtype).name; }

Dtype parse_dtype(std::string_view name, const std::string& where) {
  for (const DtypeEntry& e : kDtypes) {
    if (name == e.name) return e.dtype;
  }
  throw Error(where + ": unknown dtype '" + std::string(name) +
              "' (expected one of BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64)");
}

bool is_float_dtype(Dtype d) {
  return d == Dtype::F8_E5M2 || d == Dtype::F8_E4M3 || d == Dtype::F16 || d == Dtype::BF16 ||
         d == Dtype::F32 || d == Dtype::F64;
}

bool is_integer_dtype(Dtype d) { return !is_float_dtype(d); }

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// ---- reader ----------------------------------------------------------------------------------

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path)
    : path_(path), mapped_(path, "safetensors file", 8, "the 8-byte safetensors header length") {
  const std::string file = path.string();
  const std::byte* const map = mapped_.data();
  const std::size_t map_size = mapped_.size();
  {  // on a throw, mapped_ unmaps the file
    const uint64_t header_len = load<uint64_t>(map);
    if (header_len > map_size - 8) {
      throw Error(file + ": header length " + std::to_string(header_len) + " runs past the end of the file (" +
                  std::to_string(map_size) + " bytes; truncated or not a safetensors file?)");
    }
    data_start_ = 8 + static_cast<std::size_t>(header_len);
    const uint64_t data_size = map_size - data_start_;
    const json header =
        parse_header(std::string_view(reinterpret_cast<const char*>(map + 8), header_len), file);

    for (const auto& [name, value] : header.items()) {
      if (name == "__metadata__") {
        if (!value.is_object()) throw Error(file + ": '__metadata__' must be an object of strings, got " + value.dump());
        for (const auto& [key, v] : value.items()) {
          if (!v.is_string()) {
            throw Error(file + ": '__metadata__' entry '" + key + "' must be a string, got " + v.dump());
          }
          metadata_[key] = v.get<std::string>();
        }
        continue;
      }
      tensors_.push_back(parse_tensor_entry(name, value, data_size, file));
    }
    // nlohmann::json objects iterate in key order, so tensors_ is sorted by name.
    for (std::size_t i = 0; i < tensors_.size(); ++i) index_[tensors_[i].name] = i;

    // No two tensors may share bytes (empty tensors occupy none).
    std::vector<const TensorInfo*> by_offset;
    for (const TensorInfo& t : tensors_) {
      if (t.end > t.begin) by_offset.push_back(&t);
    }
    std::sort(by_offset.begin(), by_offset.end(),
              [](const TensorInfo* a, const TensorInfo* b) { return a->begin < b->begin; });
    for (std::size_t i = 1; i < by_offset.size(); ++i) {
      if (by_offset[i]->begin < by_offset[i - 1]->end) {
        throw Error(file + ": tensors '" + by_offset[i - 1]->name + "' [" + std::to_string(by_offset[i - 1]->begin) +
                    ", " + std::to_string(by_offset[i - 1]->end) + ") and '" + by_offset[i]->name + "' [" +
                    std::to_string(by_offset[i]->begin) + ", " + std::to_string(by_offset[i]->end) +
                    ") overlap in the data section");
      }
    }
  }
}

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
  const auto it = index_.find(name);
  if (it == index_.end()) throw Error(path_.string() + ": no tensor named '" + name + "'");
  return tensors_[it->second];
}

std::span<const std::byte> SafetensorsFile::raw(const std::string& name) const {
  const TensorInfo& t = info(name);
  return {mapped_.data() + data_start_ + t.begin, static_cast<std::size_t>(t.end - t.begin)};
}

std::vector<float> SafetensorsFile::floats(const std::string& name) const {
  std::vector<float> out(static_cast<std::size_t>(info(name).numel()));
  floats_into(name, 0, out);
  return out;
}

void SafetensorsFile::floats_into(const std::string& name, uint64_t first, std::span<float> out_span) const {
  const TensorInfo& t = info(name);
  const uint64_t numel = static_cast<uint64_t>(t.numel());
  if (first > numel || out_span.size() > numel - first) {
    throw Error(path_.string() + ": tensor '" + name + "' has " + std::to_string(numel) + " elements; elements [" +
                std::to_string(first) + ", " + std::to_string(first + out_span.size()) + ") were asked for");
  }
  const std::size_t n = out_span.size();
  float* out = out_span.data();
  const std::byte* p = raw(name).data() + first * dtype_size(t.dtype);
  switch (t.dtype) {
    case Dtype::F32:
      if (n) std::memcpy(out, p, n * 4);
      break;
    case Dtype::F16:
      for (std::size_t i = 0; i < n; ++i) out[i] = half_to_float(load<uint16_t>(p + 2 * i));
      break;
    case Dtype::BF16:
      for (std::size_t i = 0; i < n; ++i) out[i] = bfloat16_to_float(load<uint16_t>(p + 2 * i));
      break;
    case Dtype::F64:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<double>(p + 8 * i));
      break;
    case Dtype::F8_E5M2:
      // E5M2 is the upper byte of an IEEE half.
      for (std::size_t i = 0; i < n; ++i) {
        out[i] = half_to_float(static_cast<uint16_t>(static_cast<uint16_t>(load<uint8_t>(p + i)) << 8));
      }
      break;
    case Dtype::F8_E4M3:
      for (std::size_t i = 0; i < n; ++i) out[i] = f8_e4m3_to_float(load<uint8_t>(p + i));
      break;
    default:
      throw Error(path_.string() + ": tensor '" + name + "' has dtype " + dtype_name(t.dtype) +
                  ", expected a floating-point dtype (F32, F16, BF16, F64, F8_E5M2, F8_E4M3)");
  }
}

void SafetensorsFile::release(const std::string& name) const noexcept {
  const auto it = index_.find(name);
  if (it == index_.end()) return;
  const TensorInfo& t = tensors_[it->second];
  mapped_.release(data_start_ + t.begin, static_cast<std::size_t>(t.end - t.begin));
}

std::vector<int64_t> SafetensorsFile::int64s(const std::string& name) const {
  const TensorInfo& t = info(name);
  const std::byte* p = raw(name).data();
  const std::size_t n = static_cast<std::size_t>(t.numel());
  std::vector<int64_t> out(n);
  switch (t.dtype) {
    case Dtype::BOOL:
      for (std::size_t i = 0; i < n; ++i) {
        const uint8_t b = load<uint8_t>(p + i);
        if (b > 1) {
          throw Error(path_.string() + ": tensor '" + name + "' (BOOL) holds byte value " + std::to_string(b) +
                      " at element " + std::to_string(i) + ", expected 0 or 1");
        }
        out[i] = b;
      }
      break;
    case Dtype::U8:
      for (std::size_t i = 0; i < n; ++i) out[i] = load<uint8_t>(p + i);
      break;
    case Dtype::I8:
      for (std::size_t i = 0; i < n; ++i) out[i] = load<int8_t>(p + i);
      break;
    case Dtype::I16:
      for (std::size_t i = 0; i < n; ++i) out[i] = load<int16_t>(p + 2 * i);
      break;
    case Dtype::U16:
      for (std::size_t i = 0; i < n; ++i) out[i] = load<uint16_t>(p + 2 * i);
      break;
    case Dtype::I32:
      for (std::size_t i = 0; i < n; ++i) out[i] = load<int32_t>(p + 4 * i);
      break;
    case Dtype::U32:
      for (std::size_t i = 0; i < n; ++i) out[i] = load<uint32_t>(p + 4 * i);
      break;
    case Dtype::I64:
      if (n) std::memcpy(out.data(), p, n * 8);
      break;
    case Dtype::U64:
      for (std::size_t i = 0; i < n; ++i) {
        const uint64_t v = load<uint64_t>(p + 8 * i);
        if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          throw Error(path_.string() + ": tensor '" + name + "' (U64) element " + std::to_string(i) + " = " +
                      std::to_string(v) + " does not fit in int64");
        }
        out[i] = static_cast<int64_t>(v);
      }
      break;
    default:
      throw Error(path_.string() + ": tensor '" + name + "' has dtype " + dtype_name(t.dtype) +
                  ", expected an integer or BOOL dtype");
  }
  return out;
}

// ---- writer ----------------------------------------------------------------------------------

bool SafetensorsWriter::has(const std::string& name) const {
  return std::any_of(tensors_.begin(), tensors_.end(), [&](const TensorInfo& t) { return t.name == name; });
}

void SafetensorsWriter::add_info(const std::string& name, Dtype dtype, const std::vector<int64_t>& shape,
                                 std::size_t count) {
  if (name.empty() || name == "__metadata__") {
    throw Error("safetensors writer: invalid tensor name '" + name + "'");
  }
  if (has(name)) throw Error("safetensors writer: tensor '" + name + "' is added twice");
  uint64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error("safetensors writer: tensor '" + name + "' has negative dimension in " + shape_string(shape));
    numel *= static_cast<uint64_t>(d);
  }
  if (numel != count) {
    throw Error("safetensors writer: tensor '" + name + "' has shape " + shape_string(shape) + " (" +
                std::to_string(numel) + " elements) but " + std::to_string(count) + " values were given");
  }
  TensorInfo t;
  t.name = name;
  t.dtype = dtype;
  t.shape = shape;
  t.begin = data_.size();
  t.end = t.begin + count * dtype_size(dtype);
  tensors_.push_back(std::move(t));
}

void SafetensorsWriter::add_floats(const std::string& name, Dtype dtype, const std::vector<int64_t>& shape,
                                   std::span<const float> values) {
  if (dtype != Dtype::F32 && dtype != Dtype::F16 && dtype != Dtype::BF16 && dtype != Dtype::F64) {
    throw Error("safetensors writer: tensor '" + name + "': cannot store float values as " + dtype_name(dtype) +
                " (expected F32, F16, BF16 or F64)");
  }
  add_info(name, dtype, shape, values.size());
  const std::size_t at = data_.size();
  data_.resize(at + values.size() * dtype_size(dtype));
  std::byte* p = data_.data() + at;
  for (std::size_t i = 0; i < values.size(); ++i) {
    switch (dtype) {
      case Dtype::F32:
        std::memcpy(p + 4 * i, &values[i], 4);
        break;
      case Dtype::F16: {
        const uint16_t h = float_to_half(values[i]);
        std::memcpy(p + 2 * i, &h, 2);
        break;
      }
      case Dtype::BF16: {
        const uint16_t b = float_to_bfloat16(values[i]);
        std::memcpy(p + 2 * i, &b, 2);
        break;
      }
      default: {
        const double d = values[i];
        std::memcpy(p + 8 * i, &d, 8);
        break;
      }
    }
  }
}

void SafetensorsWriter::add_int64s(const std::string& name, Dtype dtype, const std::vector<int64_t>& shape,
                                   std::span<const int64_t> values) {
  int64_t lo = 0, hi = 0;
  switch (dtype) {
    case Dtype::BOOL: lo = 0; hi = 1; break;
    case Dtype::U8: lo = 0; hi = 255; break;
    case Dtype::I8: lo = -128; hi = 127; break;
    case Dtype::I16: lo = -32768; hi = 32767; break;
    case Dtype::U16: lo = 0; hi = 65535; break;
    case Dtype::I32: lo = std::numeric_limits<int32_t>::min(); hi = std::numeric_limits<int32_t>::max(); break;
    case Dtype::U32: lo = 0; hi = std::numeric_limits<uint32_t>::max(); break;
    case Dtype::I64:
      lo = std::numeric_limits<int64_t>::min(); hi = std::numeric_limits<int64_t>::max(); break;
    case Dtype::U64: lo = 0; hi = std::numeric_limits<int64_t>::max(); break;
    default:
      throw Error("safetensors writer: tensor '" + name + "': cannot store integer values as " + dtype_name(dtype));
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] < lo || values[i] > hi) {
      throw Error("safetensors writer: tensor '" + name + "' element " + std::to_string(i) + " = " +
                  std::to_string(values[i]) + " does not fit in " + dtype_name(dtype));
    }
  }
  add_info(name, dtype, shape, values.size());
  const std::size_t size = dtype_size(dtype);
  const std::size_t at = data_.size();
  data_.resize(at + values.size() * size);
  // Little-endian: the low `size` bytes of the two's-complement int64 are the stored value.
  for (std::size_t i = 0; i < values.size(); ++i) std::memcpy(data_.data() + at + size * i, &values[i], size);
}

void SafetensorsWriter::write(const std::filesystem::path& path) const {
  json header = json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  for (const TensorInfo& t : tensors_) {
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {t.begin, t.end}}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // align the data section to 8 bytes
  const uint64_t length = text.size();
  write_file_atomically(path, [&](std::ostream& out) {
    char prefix[8];
    std::memcpy(prefix, &length, 8);
    out.write(prefix, 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.write(reinterpret_cast<const char*>(data_.data()), static_cast<std::streamsize>(data_.size()));
  });
}

}  // namespace specdec
