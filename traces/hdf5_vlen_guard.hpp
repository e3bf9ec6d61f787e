#pragma once
// Checks, from the file's own bytes, what libhdf5 1.10 trusts when it reads a variable-length
// string: the 16-byte descriptors (length, global heap collection address, object index), the
// global heap collection ("GCOL") they point at, and the object inside it. libhdf5's H5HG_read
// path segfaults, copies overlapping memory, loops forever or allocates gigabytes when those are
// malformed, so the reader calls check_attribute / check_dataset before every vlen string
// H5Aread / H5Dread. The guard never asks libhdf5 to read a vlen string itself.
// Failures throw specdec::Error "<what was wrong> (at file offset N)"; callers add the file name.
#include <hdf5.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace specdec::h5 {

class VlenGuard {
 public:
  // Opens the file for reading (throws if it cannot); everything else is validated lazily.
  explicit VlenGuard(const std::filesystem::path& file);
  ~VlenGuard();
  VlenGuard(const VlenGuard&) = delete;
  VlenGuard& operator=(const VlenGuard&) = delete;
  VlenGuard(VlenGuard&& o) noexcept { *this = std::move(o); }
  VlenGuard& operator=(VlenGuard&& o) noexcept;

  // Throws unless the vlen string attribute `name` of `obj` (file, group or dataset) is stored in
  // the object header's compact storage and every descriptor is null (length 0, address 0) or
  // names an existing object of exactly that length in a well-formed collection.
  void check_attribute(hid_t obj, const std::string& name);
  // The same for a scalar or 1-D vlen string dataset with contiguous storage.
  void check_dataset(hid_t dataset);

 private:
  struct Collection {
    uint64_t size = 0;
    std::vector<std::pair<uint16_t, uint64_t>> objects;  // (index, size), sorted by index
  };
  struct Region {  // a byte range of an object header that holds messages
    uint64_t begin, end;
  };

  void init();
  [[noreturn]] void fail(const std::string& what, uint64_t at) const;
  void read(uint64_t offset, void* dst, std::size_t n) const;
  uint64_t absolute(uint64_t relative, uint64_t at, const std::string& what) const;
  const Collection& collection(uint64_t address, const std::string& what);
  void check_descriptor(const uint8_t* d, uint64_t at, const std::string& what);
  bool check_attribute_message(std::span<const uint8_t> m, uint64_t at, const std::string& name);
  using MessageVisitor = std::function<void(unsigned type, unsigned flags, std::span<const uint8_t> body, uint64_t at)>;
  void for_each_message(const H5O_info_t& info, const std::string& what, const MessageVisitor& visit);

  int fd_ = -1;
  uint64_t size_ = 0;  // the real file size: every read is checked against it
  uint64_t base_ = 0;  // where the superblock is; file addresses are relative to it
  bool ready_ = false;
  std::map<uint64_t, Collection> heaps_;  // validated collections by absolute address
};

}  // namespace specdec::h5
