#pragma once
// A small RAII wrapper over the HDF5 C API: files, groups, numeric 1-D/2-D datasets, string
// datasets and scalar attributes. HDF5's own error printing is switched off; every failure is
// thrown as specdec::Error "<file>: <object path>: <what was wrong>".
// The HDF5 library (serial build) is not thread-safe: use these objects from one thread at a time.
#include <hdf5.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace specdec::h5 {

class VlenGuard;

// The element types this wrapper stores. Names are the ones used in error messages and SCHEMA.md.
enum class Dtype { int32, int64, uint8, uint32, uint64, float32, float64, string, other };
const char* dtype_name(Dtype d);

// Maps a C++ element type to its Dtype; only the types below are supported.
template <class T> struct DtypeOf;
template <> struct DtypeOf<int32_t> { static constexpr Dtype value = Dtype::int32; };
template <> struct DtypeOf<int64_t> { static constexpr Dtype value = Dtype::int64; };
template <> struct DtypeOf<uint8_t> { static constexpr Dtype value = Dtype::uint8; };
template <> struct DtypeOf<uint32_t> { static constexpr Dtype value = Dtype::uint32; };
template <> struct DtypeOf<uint64_t> { static constexpr Dtype value = Dtype::uint64; };
template <> struct DtypeOf<float> { static constexpr Dtype value = Dtype::float32; };
template <> struct DtypeOf<double> { static constexpr Dtype value = Dtype::float64; };

// How a string attribute or dataset is stored. h5py reads variable-length UTF-8 as str.
enum class StringStorage { variable, fixed };

// When a 2-D dataset is chunked and deflate-compressed. `automatic` compresses datasets of at
// least kCompressMinBytes when the deflate filter is available.
enum class Compression { none, automatic };
inline constexpr std::size_t kCompressMinBytes = 64 * 1024;

// Owns one HDF5 identifier and closes it with the matching H5*close function.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = H5I_INVALID_HID; }
  Handle& operator=(Handle&& o) noexcept;
  ~Handle() { reset(); }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset() noexcept;
  // Closes now and reports failure (a destructor cannot).
  herr_t close();

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// Something that carries attributes (a group or a dataset) and knows where it is, for messages.
class Object {
 public:
  const std::string& file_name() const { return file_; }
  const std::string& path() const { return path_; }
  hid_t id() const { return handle_.get(); }

  bool has_attribute(const std::string& name) const;
  void write_attribute(const std::string& name, int64_t value);
  void write_attribute(const std::string& name, uint64_t value);
  void write_attribute(const std::string& name, double value);
  void write_attribute(const std::string& name, const std::string& value,
                       StringStorage storage = StringStorage::variable);
  void write_attribute(const std::string& name, const char* value) { write_attribute(name, std::string(value)); }
  // Readers check the stored type exactly and throw naming the attribute when it differs.
  int64_t read_int64_attribute(const std::string& name) const;
  uint64_t read_uint64_attribute(const std::string& name) const;
  double read_double_attribute(const std::string& name) const;
  // Accepts variable-length and fixed-length strings (ASCII or UTF-8).
  std::string read_string_attribute(const std::string& name) const;

  // Throws "<file>: <path>: <what>"; `what` names the problem and the expectation.
  [[noreturn]] void fail(const std::string& what) const;
  std::string where(const std::string& child = {}) const;

 protected:
  Object(std::string file, std::string path, Handle handle)
      : file_(std::move(file)), path_(std::move(path)), handle_(std::move(handle)) {}
  Object(Object&&) noexcept = default;
  Object& operator=(Object&&) noexcept = default;
  ~Object() = default;

  std::string file_;
  std::string path_;
  Handle handle_;
  // Files opened for reading check every variable-length string against the file's bytes before
  // libhdf5 reads it (hdf5_vlen_guard.hpp); shared by the objects opened from the file.
  std::shared_ptr<VlenGuard> guard_;

 private:
  Handle open_attribute(const std::string& name, Dtype expected) const;
};

// One dataset, open for reading and (if the file is writable) for writing row ranges.
class Dataset : public Object {
 public:
  Dtype dtype() const;
  std::vector<uint64_t> shape() const;
  // Elements in the dataset, after checking that its declared extent can be real: the product of
  // its dimensions does not overflow, and its bytes fit in the file (uncompressed) or within
  // deflate's largest expansion of the file (filtered). A hostile file declaring terabytes fails
  // here, naming the dataset, before anything is allocated for it.
  uint64_t checked_elements() const;
  // Writes rows [row0, row0 + nrows) of a 2-D dataset; data: (nrows, cols) row-major.
  template <class T> void write_rows(uint64_t row0, uint64_t nrows, const T* data);
  // Reads rows [row0, row0 + nrows) of a 2-D dataset into out: (nrows, cols) row-major.
  template <class T> void read_rows(uint64_t row0, uint64_t nrows, T* out) const;

 private:
  friend class Group;
  Dataset(std::string file, std::string path, Handle handle) : Object(std::move(file), std::move(path), std::move(handle)) {}
  void check_dtype(Dtype expected) const;
  void rows_io(uint64_t row0, uint64_t nrows, hid_t mem_type, void* buf, bool write) const;
};

// A group; the File is its root group "/".
class Group : public Object {
 public:
  Group(Group&&) noexcept = default;
  Group& operator=(Group&&) noexcept = default;

  // `name` may be a relative path ("steps/target_logits"); every component is checked.
  bool has(const std::string& name) const;
  bool has_group(const std::string& name) const;
  bool has_dataset(const std::string& name) const;
  // Names of the direct members, in HDF5's name order.
  std::vector<std::string> members() const;
  void remove(const std::string& name);

  Group create_group(const std::string& name);
  Group open_group(const std::string& name) const;
  Dataset open_dataset(const std::string& name) const;

  // 1-D numeric datasets (an empty vector gives a dataset of shape (0)).
  template <class T> void write_vector(const std::string& name, const std::vector<T>& values);
  template <class T> std::vector<T> read_vector(const std::string& name) const;
  // 2-D numeric datasets; data: (rows, cols) row-major.
  template <class T>
  void write_matrix(const std::string& name, uint64_t rows, uint64_t cols, const T* data,
                    Compression compression = Compression::automatic);
  template <class T> std::vector<T> read_matrix(const std::string& name, uint64_t* rows, uint64_t* cols) const;
  // Creates an uninitialised 2-D dataset to be filled with Dataset::write_rows.
  Dataset create_matrix(const std::string& name, Dtype dtype, uint64_t rows, uint64_t cols,
                        Compression compression = Compression::automatic);

  // Scalar string dataset (for long text such as JSON) and 1-D string datasets.
  void write_string(const std::string& name, const std::string& value,
                    StringStorage storage = StringStorage::variable);
  std::string read_string(const std::string& name) const;
  void write_strings(const std::string& name, const std::vector<std::string>& values);
  std::vector<std::string> read_strings(const std::string& name) const;

 protected:
  friend class File;
  Group(std::string file, std::string path, Handle handle) : Object(std::move(file), std::move(path), std::move(handle)) {}

 private:
  Dataset create_dataset(const std::string& name, Dtype dtype, const std::vector<uint64_t>& dims,
                         Compression compression);
  std::string child_path(const std::string& name) const;
};

class File : public Group {
 public:
  // `display_name` is what error messages call the file (default: the path as given), so a file
  // written under a temporary name can be reported under its final name.
  static File create(const std::filesystem::path& path, const std::string& display_name = {});
  // A file built in memory (HDF5's core driver): libhdf5 itself never writes to disk, so a full
  // disk fails in save_atomically, cleanly, and never inside libhdf5 (whose close after a failed
  // write leaves state that crashes it at exit).
  static File create_in_memory(const std::string& display_name);
  static File open_read_only(const std::filesystem::path& path, const std::string& display_name = {});
  static File open_read_write(const std::filesystem::path& path, const std::string& display_name = {});
  // True when the file exists and starts with an HDF5 signature.
  static bool is_hdf5(const std::filesystem::path& path);

  File(File&&) noexcept = default;
  File& operator=(File&&) noexcept = default;
  // Flushes and closes, throwing if HDF5 could not write everything.
  void close();
  // For a file from create_in_memory: closes it and writes its bytes to `path` atomically
  // (reference/io/atomic_file.hpp).
  void save_atomically(const std::filesystem::path& path);

 private:
  File(std::string file, Handle handle) : Group(std::move(file), "/", std::move(handle)) {}
  static File open(const std::filesystem::path& path, const std::string& display_name, unsigned flags);
};

// True when the deflate (gzip) filter can encode in this HDF5 build.
bool deflate_available();

}  // namespace specdec::h5
