#include "traces/hdf5.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/io/atomic_file.hpp"
#include "traces/hdf5_vlen_guard.hpp"

namespace specdec::h5 {
namespace {

// HDF5 prints its error stack to stderr by default; we report through specdec::Error instead.
void initialize() {
  static const bool done = [] {
    H5open();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
}

// The innermost description on HDF5's error stack (then cleared), e.g. "unable to open file".
std::string hdf5_detail() {
  std::string detail;
  auto walk = [](unsigned n, const H5E_error2_t* e, void* data) -> herr_t {
    auto* out = static_cast<std::string*>(data);
    if (n == 0 && e->desc != nullptr) *out = e->desc;
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk, &detail);
  H5Eclear2(H5E_DEFAULT);
  return detail;
}

std::string with_detail(const std::string& what) {
  const std::string d = hdf5_detail();
  return d.empty() ? what : what + " (HDF5: " + d + ")";
}

[[noreturn]] void throw_at(const std::string& file, const std::string& path, const std::string& what) {
  throw Error(file + ": " + path + ": " + what);
}

hid_t native_type(Dtype d) {
  switch (d) {
    case Dtype::int32: return H5T_NATIVE_INT32;
    case Dtype::int64: return H5T_NATIVE_INT64;
    case Dtype::uint8: return H5T_NATIVE_UINT8;
    case Dtype::uint32: return H5T_NATIVE_UINT32;
    case Dtype::uint64: return H5T_NATIVE_UINT64;
    case Dtype::float32: return H5T_NATIVE_FLOAT;
    case Dtype::float64: return H5T_NATIVE_DOUBLE;
    default: return H5I_INVALID_HID;
  }
}

// Files store little-endian standard types whatever the host, so they read the same everywhere.
hid_t file_type(Dtype d) {
  switch (d) {
    case Dtype::int32: return H5T_STD_I32LE;
    case Dtype::int64: return H5T_STD_I64LE;
    case Dtype::uint8: return H5T_STD_U8LE;
    case Dtype::uint32: return H5T_STD_U32LE;
    case Dtype::uint64: return H5T_STD_U64LE;
    case Dtype::float32: return H5T_IEEE_F32LE;
    case Dtype::float64: return H5T_IEEE_F64LE;
    default: return H5I_INVALID_HID;
  }
}

std::size_t dtype_size(Dtype d) {
  switch (d) {
    case Dtype::int32: case Dtype::uint32: case Dtype::float32: return 4;
    case Dtype::int64: case Dtype::uint64: case Dtype::float64: return 8;
    case Dtype::uint8: return 1;
    default: return 0;
  }
}

Dtype classify(hid_t type) {
  const H5T_class_t cls = H5Tget_class(type);
  const std::size_t size = H5Tget_size(type);
  if (cls == H5T_STRING) return Dtype::string;
  if (cls == H5T_FLOAT) {
    if (size == 4) return Dtype::float32;
    if (size == 8) return Dtype::float64;
    return Dtype::other;
  }
  if (cls == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
    if (is_signed && size == 4) return Dtype::int32;
    if (is_signed && size == 8) return Dtype::int64;
    if (!is_signed && size == 1) return Dtype::uint8;
    if (!is_signed && size == 4) return Dtype::uint32;
    if (!is_signed && size == 8) return Dtype::uint64;
  }
  return Dtype::other;
}

// A description of an unsupported stored type for messages ("int16", "enum", ...).
std::string describe_type(hid_t type) {
  const Dtype d = classify(type);
  if (d != Dtype::other) return dtype_name(d);
  const std::size_t bits = H5Tget_size(type) * 8;
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: return (H5Tget_sign(type) == H5T_SGN_2 ? "int" : "uint") + std::to_string(bits);
    case H5T_FLOAT: return "float" + std::to_string(bits);
    case H5T_ENUM: return "enum";
    case H5T_COMPOUND: return "compound";
    case H5T_ARRAY: return "array";
    case H5T_VLEN: return "vlen";
    case H5T_OPAQUE: return "opaque";
    default: return "an unsupported type";
  }
}

Handle string_type(StringStorage storage, std::size_t fixed_size) {
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  if (storage == StringStorage::variable) {
    H5Tset_size(t.get(), H5T_VARIABLE);
  } else {
    H5Tset_size(t.get(), std::max<std::size_t>(1, fixed_size));
    H5Tset_strpad(t.get(), H5T_STR_NULLPAD);
  }
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  return t;
}

// The size in bytes of the file that holds `obj`, to check declared sizes against.
uint64_t file_size_of(hid_t obj) {
  Handle file(H5Iget_file_id(obj), H5Fclose);
  hsize_t size = 0;
  if (!file.valid() || H5Fget_filesize(file.get(), &size) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return 0;
  }
  return size;
}

// Reads one string from an attribute (is_attr) or dataset whose stored type is `ftype`.
std::string read_one_string(hid_t obj, hid_t ftype, bool is_attr, const std::string& file,
                            const std::string& path) {
  if (H5Tget_class(ftype) != H5T_STRING) {
    throw_at(file, path, "dtype is " + describe_type(ftype) + ", expected string");
  }
  Handle space(is_attr ? H5Aget_space(obj) : H5Dget_space(obj), H5Sclose);
  if (H5Sget_simple_extent_npoints(space.get()) != 1) {
    throw_at(file, path, "expected a single string, found " +
                             std::to_string(H5Sget_simple_extent_npoints(space.get())) + " elements");
  }
  herr_t rc;
  if (H5Tis_variable_str(ftype) > 0) {
    Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(ftype));
    char* p = nullptr;
    rc = is_attr ? H5Aread(obj, mem.get(), &p) : H5Dread(obj, mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &p);
    if (rc < 0) throw_at(file, path, with_detail("cannot read string"));
    std::string s = p != nullptr ? std::string(p) : std::string();
    H5free_memory(p);
    return s;
  }
  const std::size_t size = H5Tget_size(ftype);
  if (size > file_size_of(obj)) {
    throw_at(file, path, "declares a " + std::to_string(size) + "-byte string, larger than the file; the file is corrupt");
  }
  Handle mem(H5Tcopy(ftype), H5Tclose);
  std::string buf(size, '\0');
  rc = is_attr ? H5Aread(obj, mem.get(), buf.data()) : H5Dread(obj, mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
  if (rc < 0) throw_at(file, path, with_detail("cannot read string"));
  if (H5Tget_strpad(ftype) == H5T_STR_SPACEPAD) {
    buf.erase(buf.find_last_not_of(' ') + 1);
  } else {
    buf.resize(std::strlen(buf.c_str()));
  }
  return buf;
}

std::string shape_string(const std::vector<uint64_t>& dims) {
  std::ostringstream s;
  s << "(";
  for (std::size_t i = 0; i < dims.size(); ++i) s << (i ? ", " : "") << dims[i];
  s << (dims.size() == 1 ? ",)" : ")");
  return s.str();
}

void check_name(const std::string& file, const std::string& parent, const std::string& name) {
  if (name.empty() || name.front() == '/' || name.back() == '/' || name.find("//") != std::string::npos) {
    throw_at(file, parent, "invalid member name '" + name + "' (expected a non-empty relative path)");
  }
}

}  // namespace

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::int32: return "int32";
    case Dtype::int64: return "int64";
    case Dtype::uint8: return "uint8";
    case Dtype::uint32: return "uint32";
    case Dtype::uint64: return "uint64";
    case Dtype::float32: return "float32";
    case Dtype::float64: return "float64";
    case Dtype::string: return "string";
    default: return "an unsupported type";
  }
}

bool deflate_available() {
  initialize();
  if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0) return false;
  unsigned config = 0;
  if (H5Zget_filter_info(H5Z_FILTER_DEFLATE, &config) < 0) return false;
  return (config & H5Z_FILTER_CONFIG_ENCODE_ENABLED) != 0;
}

// ---- Handle ----------------------------------------------------------------------------------

Handle& Handle::operator=(Handle&& o) noexcept {
  if (this != &o) {
    reset();
    id_ = o.id_;
    closer_ = o.closer_;
    o.id_ = H5I_INVALID_HID;
  }
  return *this;
}

void Handle::reset() noexcept {
  if (id_ >= 0 && closer_ != nullptr) {
    closer_(id_);
    H5Eclear2(H5E_DEFAULT);
  }
  id_ = H5I_INVALID_HID;
}

herr_t Handle::close() {
  herr_t rc = 0;
  if (id_ >= 0 && closer_ != nullptr) rc = closer_(id_);
  id_ = H5I_INVALID_HID;
  return rc;
}

// ---- Object (attributes) ---------------------------------------------------------------------

void Object::fail(const std::string& what) const { throw_at(file_, path_, what); }

std::string Object::where(const std::string& child) const {
  std::string p = path_;
  if (!child.empty()) p = (path_ == "/" ? "/" : path_ + "/") + child;
  return file_ + ": " + p;
}

bool Object::has_attribute(const std::string& name) const {
  const htri_t r = H5Aexists(id(), name.c_str());
  if (r < 0) fail(with_detail("cannot check for attribute '" + name + "'"));
  return r > 0;
}

namespace {
template <class T>
void write_scalar_attribute(Object& obj, const std::string& name, Dtype d, const T& value) {
  if (obj.has_attribute(name) && H5Adelete(obj.id(), name.c_str()) < 0) {
    obj.fail(with_detail("cannot replace attribute '" + name + "'"));
  }
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(H5Acreate2(obj.id(), name.c_str(), file_type(d), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.valid() || H5Awrite(attr.get(), native_type(d), &value) < 0) {
    obj.fail(with_detail("cannot write attribute '" + name + "'"));
  }
}
}  // namespace

void Object::write_attribute(const std::string& name, int64_t value) {
  write_scalar_attribute(*this, name, Dtype::int64, value);
}
void Object::write_attribute(const std::string& name, uint64_t value) {
  write_scalar_attribute(*this, name, Dtype::uint64, value);
}
void Object::write_attribute(const std::string& name, double value) {
  write_scalar_attribute(*this, name, Dtype::float64, value);
}

void Object::write_attribute(const std::string& name, const std::string& value, StringStorage storage) {
  if (storage == StringStorage::variable && value.find('\0') != std::string::npos) {
    fail("attribute '" + name + "': a variable-length string cannot contain NUL bytes");
  }
  if (has_attribute(name) && H5Adelete(id(), name.c_str()) < 0) {
    fail(with_detail("cannot replace attribute '" + name + "'"));
  }
  Handle type = string_type(storage, value.size());
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(H5Acreate2(id(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  herr_t rc = -1;
  if (attr.valid()) {
    if (storage == StringStorage::variable) {
      const char* p = value.c_str();
      rc = H5Awrite(attr.get(), type.get(), &p);
    } else {
      std::string buf = value.empty() ? std::string(1, '\0') : value;
      rc = H5Awrite(attr.get(), type.get(), buf.data());
    }
  }
  if (rc < 0) fail(with_detail("cannot write attribute '" + name + "'"));
}

Handle Object::open_attribute(const std::string& name, Dtype expected) const {
  if (!has_attribute(name)) fail("attribute '" + name + "' missing");
  Handle attr(H5Aopen(id(), name.c_str(), H5P_DEFAULT), H5Aclose);
  if (!attr.valid()) fail(with_detail("cannot open attribute '" + name + "'"));
  Handle type(H5Aget_type(attr.get()), H5Tclose);
  if (classify(type.get()) != expected) {
    fail("attribute '" + name + "' has dtype " + describe_type(type.get()) + ", expected " + dtype_name(expected));
  }
  if (expected != Dtype::string) {
    Handle space(H5Aget_space(attr.get()), H5Sclose);
    if (H5Sget_simple_extent_npoints(space.get()) != 1) fail("attribute '" + name + "' is not a scalar");
  }
  return attr;
}

namespace {
template <class T>
T read_scalar_attribute(const Object& obj, Handle attr, const std::string& name, Dtype d) {
  T value{};
  if (H5Aread(attr.get(), native_type(d), &value) < 0) obj.fail(with_detail("cannot read attribute '" + name + "'"));
  return value;
}
}  // namespace

int64_t Object::read_int64_attribute(const std::string& name) const {
  return read_scalar_attribute<int64_t>(*this, open_attribute(name, Dtype::int64), name, Dtype::int64);
}
uint64_t Object::read_uint64_attribute(const std::string& name) const {
  return read_scalar_attribute<uint64_t>(*this, open_attribute(name, Dtype::uint64), name, Dtype::uint64);
}
double Object::read_double_attribute(const std::string& name) const {
  return read_scalar_attribute<double>(*this, open_attribute(name, Dtype::float64), name, Dtype::float64);
}

std::string Object::read_string_attribute(const std::string& name) const {
  Handle attr = open_attribute(name, Dtype::string);
  Handle type(H5Aget_type(attr.get()), H5Tclose);
  if (guard_ && H5Tis_variable_str(type.get()) > 0) {
    try {
      guard_->check_attribute(id(), name);
    } catch (const Error& e) {
      fail(e.what());  // the guard's message names the attribute
    }
  }
  return read_one_string(attr.get(), type.get(), true, file_, path_ + " attribute '" + name + "'");
}

// ---- Dataset -----------------------------------------------------------------------------------

Dtype Dataset::dtype() const {
  Handle type(H5Dget_type(id()), H5Tclose);
  return classify(type.get());
}

std::vector<uint64_t> Dataset::shape() const {
  Handle space(H5Dget_space(id()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) fail(with_detail("cannot read the dataset's shape"));
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return {dims.begin(), dims.end()};
}

void Dataset::check_dtype(Dtype expected) const {
  Handle type(H5Dget_type(id()), H5Tclose);
  if (classify(type.get()) != expected) {
    fail("dtype is " + describe_type(type.get()) + ", expected " + dtype_name(expected));
  }
}

void Dataset::rows_io(uint64_t row0, uint64_t nrows, hid_t mem_type, void* buf, bool write) const {
  const std::vector<uint64_t> dims = shape();
  if (dims.size() != 2) fail("expected a 2-D dataset, found shape " + shape_string(dims));
  if (row0 + nrows > dims[0] || row0 + nrows < row0) {
    fail("rows [" + std::to_string(row0) + ", " + std::to_string(row0 + nrows) + ") out of range for shape " +
         shape_string(dims));
  }
  if (nrows == 0 || dims[1] == 0) return;
  Handle fspace(H5Dget_space(id()), H5Sclose);
  const hsize_t start[2] = {row0, 0};
  const hsize_t count[2] = {nrows, dims[1]};
  Handle mspace(H5Screate_simple(2, count, nullptr), H5Sclose);
  herr_t rc = H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr);
  if (rc >= 0) {
    rc = write ? H5Dwrite(id(), mem_type, mspace.get(), fspace.get(), H5P_DEFAULT, buf)
               : H5Dread(id(), mem_type, mspace.get(), fspace.get(), H5P_DEFAULT, buf);
  }
  if (rc < 0) fail(with_detail(write ? "cannot write rows" : "cannot read rows"));
}

uint64_t Dataset::checked_elements() const {
  const std::vector<uint64_t> dims = shape();
  uint64_t n = 1;
  for (uint64_t d : dims) {
    if (d != 0 && n > UINT64_MAX / d) fail("declares shape " + shape_string(dims) + ", more elements than 2^64");
    n *= d;
  }
  Handle type(H5Dget_type(id()), H5Tclose);
  const uint64_t elem = std::max<std::size_t>(1, H5Tget_size(type.get()));
  if (n != 0 && n > UINT64_MAX / elem) fail("declares shape " + shape_string(dims) + ", more bytes than 2^64");
  const uint64_t bytes = n * elem;
  const uint64_t file_size = file_size_of(id());
  Handle dcpl(H5Dget_create_plist(id()), H5Pclose);
  const bool filtered = dcpl.valid() && H5Pget_nfilters(dcpl.get()) > 0;
  // Deflate expands by at most about 1032:1; no filter or layout stores more than the file holds.
  const uint64_t ratio = filtered ? 1100 : 1;
  const uint64_t limit = file_size > UINT64_MAX / ratio ? UINT64_MAX : file_size * ratio;
  if (bytes > limit) {
    fail("declares shape " + shape_string(dims) + " (" + std::to_string(bytes) + " bytes) but the file holds only " +
         std::to_string(file_size) + " bytes" + (filtered ? " (even decompressed)" : "") +
         "; the file is truncated or corrupt");
  }
  if (n > SIZE_MAX / elem) fail("declares shape " + shape_string(dims) + ", too large for this machine");
  return n;
}

template <class T> void Dataset::write_rows(uint64_t row0, uint64_t nrows, const T* data) {
  check_dtype(DtypeOf<T>::value);
  rows_io(row0, nrows, native_type(DtypeOf<T>::value), const_cast<T*>(data), true);
}

template <class T> void Dataset::read_rows(uint64_t row0, uint64_t nrows, T* out) const {
  check_dtype(DtypeOf<T>::value);
  rows_io(row0, nrows, native_type(DtypeOf<T>::value), out, false);
}

// ---- Group -------------------------------------------------------------------------------------

std::string Group::child_path(const std::string& name) const { return path_ == "/" ? "/" + name : path_ + "/" + name; }

bool Group::has(const std::string& name) const {
  check_name(file_, path_, name);
  // H5Lexists fails rather than answering "no" when an intermediate component is missing.
  std::size_t pos = 0;
  while (true) {
    const std::size_t slash = name.find('/', pos);
    const std::string prefix = name.substr(0, slash);
    const htri_t r = H5Lexists(id(), prefix.c_str(), H5P_DEFAULT);
    if (r < 0) H5Eclear2(H5E_DEFAULT);
    if (r <= 0) return false;
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  const htri_t ok = H5Oexists_by_name(id(), name.c_str(), H5P_DEFAULT);
  if (ok < 0) H5Eclear2(H5E_DEFAULT);
  return ok > 0;
}

namespace {
H5I_type_t object_type(hid_t loc, const std::string& name) {
  Handle obj(H5Oopen(loc, name.c_str(), H5P_DEFAULT), H5Oclose);
  if (!obj.valid()) {
    H5Eclear2(H5E_DEFAULT);
    return H5I_BADID;
  }
  return H5Iget_type(obj.get());
}
}  // namespace

bool Group::has_group(const std::string& name) const { return has(name) && object_type(id(), name) == H5I_GROUP; }
bool Group::has_dataset(const std::string& name) const {
  return has(name) && object_type(id(), name) == H5I_DATASET;
}

std::vector<std::string> Group::members() const {
  H5G_info_t info;
  if (H5Gget_info(id(), &info) < 0) fail(with_detail("cannot list group members"));
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t n = H5Lget_name_by_idx(id(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (n < 0) fail(with_detail("cannot list group members"));
    std::string name(static_cast<std::size_t>(n) + 1, '\0');
    H5Lget_name_by_idx(id(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(n));
    names.push_back(std::move(name));
  }
  return names;
}

void Group::remove(const std::string& name) {
  if (!has(name)) throw_at(file_, child_path(name), "cannot remove: object missing");
  if (H5Ldelete(id(), name.c_str(), H5P_DEFAULT) < 0) throw_at(file_, child_path(name), with_detail("cannot remove"));
}

Group Group::create_group(const std::string& name) {
  check_name(file_, path_, name);
  if (has(name)) throw_at(file_, child_path(name), "cannot create group: an object of that name already exists");
  Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  Handle g(H5Gcreate2(id(), name.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  if (!g.valid()) throw_at(file_, child_path(name), with_detail("cannot create group"));
  Group out(file_, child_path(name), std::move(g));
  out.guard_ = guard_;
  return out;
}

Group Group::open_group(const std::string& name) const {
  if (!has(name)) throw_at(file_, child_path(name), "group missing");
  if (object_type(id(), name) != H5I_GROUP) throw_at(file_, child_path(name), "expected a group, found a dataset");
  Handle g(H5Gopen2(id(), name.c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.valid()) throw_at(file_, child_path(name), with_detail("cannot open group"));
  Group out(file_, child_path(name), std::move(g));
  out.guard_ = guard_;
  return out;
}

Dataset Group::open_dataset(const std::string& name) const {
  if (!has(name)) throw_at(file_, child_path(name), "dataset missing");
  if (object_type(id(), name) != H5I_DATASET) throw_at(file_, child_path(name), "expected a dataset, found a group");
  Handle d(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.valid()) throw_at(file_, child_path(name), with_detail("cannot open dataset"));
  Dataset out(file_, child_path(name), std::move(d));
  out.guard_ = guard_;
  return out;
}

Dataset Group::create_dataset(const std::string& name, Dtype dtype, const std::vector<uint64_t>& dims,
                              Compression compression) {
  check_name(file_, path_, name);
  const std::string where_ = child_path(name);
  if (has(name)) throw_at(file_, where_, "cannot create dataset: an object of that name already exists");
  const std::vector<hsize_t> hdims(dims.begin(), dims.end());
  Handle space(H5Screate_simple(static_cast<int>(hdims.size()), hdims.data(), nullptr), H5Sclose);
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  std::size_t bytes = dtype_size(dtype);
  for (uint64_t d : dims) bytes *= static_cast<std::size_t>(d);
  const bool nonempty = std::all_of(dims.begin(), dims.end(), [](uint64_t d) { return d > 0; });
  if (compression == Compression::automatic && dims.size() == 2 && nonempty && bytes >= kCompressMinBytes &&
      deflate_available()) {
    // Chunks of whole rows (capped at 1 Mi elements wide) and about 1 MiB each.
    const uint64_t cols = std::min<uint64_t>(dims[1], uint64_t{1} << 20);
    const uint64_t rows = std::clamp<uint64_t>((uint64_t{1} << 20) / (cols * dtype_size(dtype)), 1, dims[0]);
    const hsize_t chunk[2] = {rows, cols};
    H5Pset_chunk(dcpl.get(), 2, chunk);
    H5Pset_shuffle(dcpl.get());
    H5Pset_deflate(dcpl.get(), 4);
  }
  Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  Handle d(H5Dcreate2(id(), name.c_str(), file_type(dtype), space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT),
           H5Dclose);
  if (!d.valid()) throw_at(file_, where_, with_detail("cannot create dataset"));
  return Dataset(file_, where_, std::move(d));
}

Dataset Group::create_matrix(const std::string& name, Dtype dtype, uint64_t rows, uint64_t cols,
                             Compression compression) {
  if (native_type(dtype) == H5I_INVALID_HID) throw_at(file_, child_path(name), "create_matrix: unsupported dtype");
  return create_dataset(name, dtype, {rows, cols}, compression);
}

template <class T> void Group::write_vector(const std::string& name, const std::vector<T>& values) {
  constexpr Dtype d = DtypeOf<T>::value;
  Dataset ds = create_dataset(name, d, {values.size()}, Compression::none);
  if (!values.empty() && H5Dwrite(ds.id(), native_type(d), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0) {
    ds.fail(with_detail("cannot write dataset"));
  }
}

template <class T> std::vector<T> Group::read_vector(const std::string& name) const {
  constexpr Dtype d = DtypeOf<T>::value;
  Dataset ds = open_dataset(name);
  ds.check_dtype(d);
  const std::vector<uint64_t> dims = ds.shape();
  if (dims.size() != 1) ds.fail("expected a 1-D dataset, found shape " + shape_string(dims));
  std::vector<T> out(static_cast<std::size_t>(ds.checked_elements()));
  if (!out.empty() && H5Dread(ds.id(), native_type(d), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0) {
    ds.fail(with_detail("cannot read dataset"));
  }
  return out;
}

template <class T>
void Group::write_matrix(const std::string& name, uint64_t rows, uint64_t cols, const T* data,
                         Compression compression) {
  Dataset ds = create_dataset(name, DtypeOf<T>::value, {rows, cols}, compression);
  ds.write_rows<T>(0, rows, data);
}

template <class T> std::vector<T> Group::read_matrix(const std::string& name, uint64_t* rows, uint64_t* cols) const {
  Dataset ds = open_dataset(name);
  ds.check_dtype(DtypeOf<T>::value);
  const std::vector<uint64_t> dims = ds.shape();
  if (dims.size() != 2) ds.fail("expected a 2-D dataset, found shape " + shape_string(dims));
  std::vector<T> out(static_cast<std::size_t>(ds.checked_elements()));
  ds.read_rows<T>(0, dims[0], out.data());
  *rows = dims[0];
  *cols = dims[1];
  return out;
}

void Group::write_string(const std::string& name, const std::string& value, StringStorage storage) {
  check_name(file_, path_, name);
  const std::string where_ = child_path(name);
  if (storage == StringStorage::variable && value.find('\0') != std::string::npos) {
    throw_at(file_, where_, "a variable-length string cannot contain NUL bytes");
  }
  if (has(name)) throw_at(file_, where_, "cannot create dataset: an object of that name already exists");
  Handle type = string_type(storage, value.size());
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle d(H5Dcreate2(id(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  herr_t rc = -1;
  if (d.valid()) {
    if (storage == StringStorage::variable) {
      const char* p = value.c_str();
      rc = H5Dwrite(d.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &p);
    } else {
      std::string buf = value.empty() ? std::string(1, '\0') : value;
      rc = H5Dwrite(d.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
    }
  }
  if (rc < 0) throw_at(file_, where_, with_detail("cannot write string dataset"));
}

namespace {
// Before libhdf5 reads a variable-length string dataset of a file opened for reading.
void check_vlen_dataset(const std::shared_ptr<VlenGuard>& guard, const Dataset& ds, hid_t type) {
  if (!guard || H5Tis_variable_str(type) <= 0) return;
  try {
    guard->check_dataset(ds.id());
  } catch (const Error& e) {
    ds.fail(e.what());
  }
}
}  // namespace

std::string Group::read_string(const std::string& name) const {
  Dataset ds = open_dataset(name);
  Handle type(H5Dget_type(ds.id()), H5Tclose);
  check_vlen_dataset(guard_, ds, type.get());
  return read_one_string(ds.id(), type.get(), false, file_, ds.path());
}

void Group::write_strings(const std::string& name, const std::vector<std::string>& values) {
  check_name(file_, path_, name);
  const std::string where_ = child_path(name);
  std::vector<const char*> ptrs;
  for (const std::string& v : values) {
    if (v.find('\0') != std::string::npos) throw_at(file_, where_, "a variable-length string cannot contain NUL bytes");
    ptrs.push_back(v.c_str());
  }
  if (has(name)) throw_at(file_, where_, "cannot create dataset: an object of that name already exists");
  Handle type = string_type(StringStorage::variable, 0);
  const hsize_t n = values.size();
  Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  Handle d(H5Dcreate2(id(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  if (!d.valid() || (n > 0 && H5Dwrite(d.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0)) {
    throw_at(file_, where_, with_detail("cannot write string dataset"));
  }
}

std::vector<std::string> Group::read_strings(const std::string& name) const {
  Dataset ds = open_dataset(name);
  Handle ftype(H5Dget_type(ds.id()), H5Tclose);
  if (H5Tget_class(ftype.get()) != H5T_STRING) ds.fail("dtype is " + describe_type(ftype.get()) + ", expected string");
  const std::vector<uint64_t> dims = ds.shape();
  if (dims.size() != 1) ds.fail("expected a 1-D string dataset, found shape " + shape_string(dims));
  const std::size_t n = static_cast<std::size_t>(ds.checked_elements());
  std::vector<std::string> out;
  if (n == 0) return out;
  check_vlen_dataset(guard_, ds, ftype.get());
  if (H5Tis_variable_str(ftype.get()) > 0) {
    Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(ftype.get()));
    std::vector<char*> ptrs(n, nullptr);
    if (H5Dread(ds.id(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0) {
      ds.fail(with_detail("cannot read string dataset"));
    }
    for (char* p : ptrs) {
      out.emplace_back(p != nullptr ? p : "");
      H5free_memory(p);
    }
    return out;
  }
  const std::size_t size = H5Tget_size(ftype.get());
  Handle mem(H5Tcopy(ftype.get()), H5Tclose);
  std::string buf(n * size, '\0');
  if (H5Dread(ds.id(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0) {
    ds.fail(with_detail("cannot read string dataset"));
  }
  const bool spacepad = H5Tget_strpad(ftype.get()) == H5T_STR_SPACEPAD;
  for (std::size_t i = 0; i < n; ++i) {
    std::string s = buf.substr(i * size, size);
    if (spacepad) {
      s.erase(s.find_last_not_of(' ') + 1);
    } else {
      s.resize(std::strlen(s.c_str()));
    }
    out.push_back(std::move(s));
  }
  return out;
}

// ---- File --------------------------------------------------------------------------------------

namespace {
// Closing the file closes every object still open in it, so close() really releases the file.
Handle strong_close_fapl() {
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG);
  return fapl;
}
}  // namespace

bool File::is_hdf5(const std::filesystem::path& path) {
  initialize();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  const htri_t r = H5Fis_hdf5(path.c_str());
  H5Eclear2(H5E_DEFAULT);
  return r > 0;
}

File File::create(const std::filesystem::path& path, const std::string& display_name) {
  initialize();
  const std::string name = display_name.empty() ? path.string() : display_name;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) throw Error(name + ": cannot create: the file already exists");
  Handle fapl = strong_close_fapl();
  Handle f(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()), H5Fclose);
  if (!f.valid()) throw Error(name + ": " + with_detail("cannot create HDF5 file"));
  return File(name, std::move(f));
}

File File::create_in_memory(const std::string& display_name) {
  initialize();
  Handle fapl = strong_close_fapl();
  // Grows in 1 MiB steps; backing_store = 0: nothing is written when the file closes.
  if (H5Pset_fapl_core(fapl.get(), std::size_t{1} << 20, 0) < 0) {
    throw Error(display_name + ": " + with_detail("cannot set up an in-memory HDF5 file"));
  }
  // The name only has to be unique among the in-memory files open at once.
  static std::atomic<unsigned long> counter{0};
  const std::string name = "specdec-memory-" + std::to_string(counter.fetch_add(1)) + ".h5";
  Handle f(H5Fcreate(name.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()), H5Fclose);
  if (!f.valid()) throw Error(display_name + ": " + with_detail("cannot create an in-memory HDF5 file"));
  return File(display_name, std::move(f));
}

void File::save_atomically(const std::filesystem::path& path) {
  if (!handle_.valid()) throw Error(file_ + ": cannot save: the file is closed");
  if (H5Fflush(handle_.get(), H5F_SCOPE_LOCAL) < 0) fail(with_detail("cannot flush the in-memory HDF5 file"));
  const ssize_t size = H5Fget_file_image(handle_.get(), nullptr, 0);
  if (size < 0) fail(with_detail("cannot get the in-memory HDF5 file's image"));
  std::string image(static_cast<std::size_t>(size), '\0');
  if (H5Fget_file_image(handle_.get(), image.data(), image.size()) != size) {
    fail(with_detail("cannot copy the in-memory HDF5 file's image"));
  }
  if (handle_.close() < 0) throw Error(file_ + ": " + with_detail("cannot close the in-memory HDF5 file"));
  write_file_atomically(path, image);
}

File File::open(const std::filesystem::path& path, const std::string& display_name, unsigned flags) {
  initialize();
  const std::string name = display_name.empty() ? path.string() : display_name;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error(name + ": file not found");
  if (!std::filesystem::is_regular_file(path, ec)) throw Error(name + ": not a regular file");
  if (!is_hdf5(path)) throw Error(name + ": not an HDF5 file (no HDF5 signature found)");
  Handle fapl = strong_close_fapl();
  Handle f(H5Fopen(path.c_str(), flags, fapl.get()), H5Fclose);
  if (!f.valid()) throw Error(name + ": " + with_detail("cannot open HDF5 file"));
  return File(name, std::move(f));
}

File File::open_read_only(const std::filesystem::path& path, const std::string& display_name) {
  File f = open(path, display_name, H5F_ACC_RDONLY);
  try {
    f.guard_ = std::make_shared<VlenGuard>(path);
  } catch (const Error& e) {
    throw Error(f.file_ + ": " + e.what());
  }
  return f;
}

File File::open_read_write(const std::filesystem::path& path, const std::string& display_name) {
  return open(path, display_name, H5F_ACC_RDWR);
}

void File::close() {
  if (!handle_.valid()) return;
  if (H5Fflush(handle_.get(), H5F_SCOPE_LOCAL) < 0) {
    const std::string what = with_detail("cannot flush HDF5 file");
    handle_.reset();
    throw Error(file_ + ": " + what);
  }
  if (handle_.close() < 0) throw Error(file_ + ": " + with_detail("cannot close HDF5 file"));
}

// ---- explicit instantiations -------------------------------------------------------------------

#define SPECDEC_H5_INSTANTIATE(T)                                                                        \
  template void Dataset::write_rows<T>(uint64_t, uint64_t, const T*);                                    \
  template void Dataset::read_rows<T>(uint64_t, uint64_t, T*) const;                                     \
  template void Group::write_vector<T>(const std::string&, const std::vector<T>&);                       \
  template std::vector<T> Group::read_vector<T>(const std::string&) const;                               \
  template void Group::write_matrix<T>(const std::string&, uint64_t, uint64_t, const T*, Compression);   \
  template std::vector<T> Group::read_matrix<T>(const std::string&, uint64_t*, uint64_t*) const;

SPECDEC_H5_INSTANTIATE(int32_t)
SPECDEC_H5_INSTANTIATE(int64_t)
SPECDEC_H5_INSTANTIATE(uint8_t)
SPECDEC_H5_INSTANTIATE(uint32_t)
SPECDEC_H5_INSTANTIATE(uint64_t)
SPECDEC_H5_INSTANTIATE(float)
SPECDEC_H5_INSTANTIATE(double)
#undef SPECDEC_H5_INSTANTIATE

}  // namespace specdec::h5
