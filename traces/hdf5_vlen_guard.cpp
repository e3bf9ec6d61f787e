// Validation of vlen string descriptors and global heap collections; see hdf5_vlen_guard.hpp.
// File format references: HDF5 File Format Specification 2.0 (superblock, object headers
// versions 1 and 2, datatype/dataspace/attribute/attribute info/continuation messages, global
// heap). Only 8-byte file addresses and lengths are supported: the descriptors are then 16 bytes.
#include "traces/hdf5_vlen_guard.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bitset>
#include <cerrno>
#include <cstring>
#include <memory>
#include <set>
#include <span>
#include <string_view>

#include "reference/core/error.hpp"

namespace specdec::h5 {
namespace {

constexpr uint64_t kUndefined = ~uint64_t{0};   // HADDR_UNDEF as stored in the file
constexpr std::size_t kDescriptor = 16;          // seq_len (4) + collection address (8) + index (4)
constexpr uint64_t kMaxChunk = 1 << 20;          // no real object header chunk comes near this
constexpr uint64_t kMaxHeaderBytes = 16 << 20;   // all chunks of one object header together
constexpr int kMaxChunks = 1000;                 // continuation blocks followed per object header
constexpr uint64_t kMinCollection = 4096;        // H5HG_MINSIZE
constexpr std::size_t kBatch = 4096;             // dataset descriptors read at a time

uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
uint32_t le32(const uint8_t* p) { return le16(p) | static_cast<uint32_t>(le16(p + 2)) << 16; }
uint64_t le64(const uint8_t* p) { return le32(p) | static_cast<uint64_t>(le32(p + 4)) << 32; }

std::string str(uint64_t v) { return std::to_string(v); }

// The name libhdf5 gives an open object, for messages ("/meta/config_json").
std::string object_name(hid_t obj) {
  char buf[256] = {};
  const ssize_t n = H5Iget_name(obj, buf, sizeof buf);
  return n > 0 ? std::string(buf) : std::string("?");
}

}  // namespace

VlenGuard::VlenGuard(const std::filesystem::path& file) {
  fd_ = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd_ < 0 || ::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    const std::string why = std::strerror(errno);
    if (fd_ >= 0) ::close(fd_);
    throw Error(file.string() + ": cannot open for validation (" + why + ")");
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

VlenGuard::~VlenGuard() {
  if (fd_ >= 0) ::close(fd_);
}

VlenGuard& VlenGuard::operator=(VlenGuard&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    size_ = o.size_;
    base_ = o.base_;
    ready_ = o.ready_;
    heaps_ = std::move(o.heaps_);
  }
  return *this;
}

void VlenGuard::fail(const std::string& what, uint64_t at) const {
  throw Error(what + " (at file offset " + str(at) + ")");
}

void VlenGuard::read(uint64_t offset, void* dst, std::size_t n) const {
  if (offset > size_ || n > size_ - offset) {
    fail("needs " + str(n) + " bytes past the end of the file (" + str(size_) + " bytes)", offset);
  }
  auto* out = static_cast<uint8_t*>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) fail("cannot read the file", offset);
    out += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<std::size_t>(got);
  }
}

// Finds the superblock (at 0, 512, 1024, ...) and checks the address and length sizes.
void VlenGuard::init() {
  if (ready_) return;
  static const uint8_t kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  uint8_t sb[16] = {};
  uint64_t at = 0;
  for (;; at = at == 0 ? 512 : at * 2) {
    if (at >= size_ || size_ - at < sizeof sb) fail("no HDF5 superblock found", 0);
    read(at, sb, sizeof sb);
    if (std::memcmp(sb, kSignature, 8) == 0) break;
  }
  const unsigned version = sb[8];
  if (version > 3) fail("superblock version " + str(version) + " is not supported", at + 8);
  const unsigned offsets = version <= 1 ? sb[13] : sb[9];
  const unsigned lengths = version <= 1 ? sb[14] : sb[10];
  if (offsets != 8 || lengths != 8) {
    fail("the file uses " + str(offsets) + "-byte addresses and " + str(lengths) +
             "-byte lengths; variable-length strings are only validated with 8-byte ones",
         at);
  }
  base_ = at;  // libhdf5 also takes the superblock's position as the base address
  ready_ = true;
}

uint64_t VlenGuard::absolute(uint64_t relative, uint64_t at, const std::string& what) const {
  if (relative == kUndefined || relative > size_ || base_ > size_ - relative) {
    fail(what + ": address " + str(relative) + " is outside the file", at);
  }
  return base_ + relative;
}

// Walks a collection once: objects must tile it exactly, so libhdf5's own walk (which trusts the
// sizes) stays inside it and terminates; the first object of index 0 is the free space and ends it.
const VlenGuard::Collection& VlenGuard::collection(uint64_t address, const std::string& what) {
  if (auto it = heaps_.find(address); it != heaps_.end()) return it->second;
  const std::string heap = what + ": global heap collection at " + str(address);
  uint8_t h[16];
  read(address, h, sizeof h);
  if (std::memcmp(h, "GCOL", 4) != 0) fail(heap + " has no GCOL signature", address);
  if (h[4] != 1) fail(heap + " has version " + str(h[4]) + ", expected 1", address + 4);
  const uint64_t size = le64(h + 8);
  if (size < kMinCollection) fail(heap + " claims " + str(size) + " bytes, less than the minimum 4096", address + 8);
  if (size > size_ - address) {
    fail(heap + " claims " + str(size) + " bytes, past the end of the file (" + str(size_) + " bytes)", address + 8);
  }
  const uint64_t end = address + size;
  // Real files never overlap collections; refusing overlaps also bounds the total walking work.
  auto next = heaps_.lower_bound(address);
  if ((next != heaps_.end() && next->first < end) ||
      (next != heaps_.begin() && std::prev(next)->first + std::prev(next)->second.size > address)) {
    fail(heap + " overlaps another collection", address);
  }
  Collection c;
  c.size = size;
  auto seen = std::make_unique<std::bitset<65536>>();
  for (uint64_t p = address + 16; p < end;) {
    if (end - p < 16) break;  // too small for an object header: libhdf5 counts it as free space
    uint8_t o[16];
    read(p, o, sizeof o);
    const uint16_t index = le16(o);
    const uint64_t n = le64(o + 8);
    if (index == 0) {  // free space: its size counts its own header
      if (n != end - p) {
        fail(heap + ": free-space object of " + str(n) + " bytes, but " + str(end - p) + " bytes remain", p + 8);
      }
      break;
    }
    if (seen->test(index)) fail(heap + ": object index " + str(index) + " appears twice", p);
    seen->set(index);
    if (n > end - p - 16 || ((n + 7) & ~uint64_t{7}) > end - p - 16) {
      fail(heap + ": object " + str(index) + " of " + str(n) + " bytes runs past the collection end", p + 8);
    }
    c.objects.emplace_back(index, n);
    p += 16 + ((n + 7) & ~uint64_t{7});
  }
  std::sort(c.objects.begin(), c.objects.end());
  return heaps_.emplace(address, std::move(c)).first->second;
}

// libhdf5 treats address 0 as a null string; otherwise it allocates seq_len bytes and copies the
// heap object (its own size) into them, so the two must agree.
void VlenGuard::check_descriptor(const uint8_t* d, uint64_t at, const std::string& what) {
  const uint32_t length = le32(d);
  const uint64_t address = le64(d + 4);
  const uint32_t index = le32(d + 12);
  if (address == 0) {
    if (length != 0) fail(what + ": a null string descriptor claims " + str(length) + " bytes", at);
    return;
  }
  const Collection& c = collection(absolute(address, at + 4, what), what);
  if (index == 0 || index > 0xffff) fail(what + ": heap object index " + str(index) + " is invalid", at + 12);
  auto it = std::lower_bound(c.objects.begin(), c.objects.end(), std::make_pair(static_cast<uint16_t>(index), uint64_t{0}));
  if (it == c.objects.end() || it->first != index) {
    fail(what + ": heap object " + str(index) + " does not exist in the collection at " + str(address), at + 12);
  }
  if (it->second != length) {
    fail(what + ": string length " + str(length) + " differs from its heap object's " + str(it->second) + " bytes", at);
  }
}

// Returns false when the message names another attribute; throws when it is `name` but unsafe.
// `at` is the file offset of the message body.
bool VlenGuard::check_attribute_message(std::span<const uint8_t> m, uint64_t at, const std::string& name) {
  const std::string what = "attribute '" + name + "'";
  const std::size_t n = m.size();
  auto need = [&](std::size_t off, std::size_t len) {
    if (off > n || len > n - off) fail(what + ": attribute message truncated", at);
  };
  need(0, 8);
  const unsigned version = m[0];
  if (version < 1 || version > 3) fail(what + ": an attribute message has unsupported version " + str(version), at);
  const std::size_t name_size = le16(m.data() + 2), dt_size = le16(m.data() + 4), ds_size = le16(m.data() + 6);
  auto padded = [&](std::size_t s) { return version == 1 ? (s + 7) & ~std::size_t{7} : s; };  // v1 pads to 8
  std::size_t p = version == 3 ? 9 : 8;  // v3 adds a character-set byte
  need(p, name_size);
  const auto* name_bytes = reinterpret_cast<const char*>(m.data() + p);
  const std::size_t name_len = strnlen(name_bytes, name_size);
  if (name_len == name_size) fail(what + ": an attribute message name is not NUL-terminated", at + p);  // libhdf5 strdup()s it
  if (std::string_view(name_bytes, name_len) != name) return false;
  if (version >= 2 && (m[1] & 3) != 0) fail(what + ": shared datatype or dataspace is not supported", at + 1);

  p += padded(name_size);
  need(p, dt_size);
  const uint8_t* dt = m.data() + p;
  if (dt_size < 8) fail(what + ": datatype truncated", at + p);
  if ((dt[0] & 0x0f) != 9 || (dt[1] & 0x0f) != 1) {
    fail(what + ": not a variable-length string (datatype class " + str(dt[0] & 0x0f) + ")", at + p);
  }
  if (le32(dt + 4) != kDescriptor) fail(what + ": vlen descriptor size " + str(le32(dt + 4)) + ", expected 16", at + p + 4);

  p += padded(dt_size);
  need(p, ds_size);
  const uint8_t* ds = m.data() + p;
  if (ds_size < 4) fail(what + ": dataspace truncated", at + p);
  const unsigned ds_version = ds[0], rank = ds[1];
  if (ds_version != 1 && ds_version != 2) fail(what + ": dataspace version " + str(ds_version) + " unknown", at + p);
  const unsigned kind = ds_version == 1 ? (rank == 0 ? 0 : 1) : ds[3];  // 0 scalar, 1 simple, 2 null
  const std::size_t dims_at = ds_version == 1 ? 8 : 4;
  if (kind > 2 || rank > 32 || (kind != 1 && rank != 0)) fail(what + ": malformed dataspace", at + p);
  if (dims_at + rank * std::size_t{8} > ds_size) fail(what + ": dataspace truncated", at + p);
  uint64_t count = kind == 0 ? 1 : kind == 2 ? 0 : 1;
  for (unsigned i = 0; i < rank && kind == 1; ++i) {
    const uint64_t dim = le64(ds + dims_at + 8 * i);
    if (dim != 0 && count > n / dim) fail(what + ": dataspace larger than its message", at + p);
    count *= dim;
  }

  p += padded(ds_size);
  if (count > n / kDescriptor) fail(what + ": " + str(count) + " descriptors do not fit in the attribute message", at);
  need(p, count * kDescriptor);
  for (uint64_t i = 0; i < count; ++i) check_descriptor(m.data() + (p + i * kDescriptor), at + p + i * kDescriptor, what);
  return true;
}

// Calls `visit(type, flags, body, offset)` for every message of the object header at `info`,
// following continuation blocks (bounded in number, size and against cycles).
void VlenGuard::for_each_message(const H5O_info_t& info, const std::string& what, const MessageVisitor& visit) {
  const uint64_t oh = absolute(info.addr, 0, what + ": object header");
  uint8_t pre[40] = {};  // the longest v2 prefix is 34 bytes
  read(oh, pre, std::min<uint64_t>(sizeof pre, size_ - oh));
  const bool v2 = std::memcmp(pre, "OHDR", 4) == 0;
  const unsigned version = v2 ? pre[4] : pre[0];
  if ((v2 && version != 2) || (!v2 && version != 1) || version != info.hdr.version) {
    fail(what + ": object header version " + str(version) + " is not the " + str(info.hdr.version) + " libhdf5 reports", oh);
  }
  const unsigned flags = v2 ? pre[5] : 0;
  if (flags & 0xc0) fail(what + ": unknown object header flags", oh + 5);
  uint64_t chunk0 = 0, start = 0;
  if (v2) {  // "OHDR", version, flags, [4 times], [2 attribute phase change values], chunk 0 size
    const std::size_t width_at = 6u + ((flags & 0x20) ? 16u : 0u) + ((flags & 0x10) ? 4u : 0u);
    const unsigned width = 1u << (flags & 3);
    for (unsigned i = 0; i < width; ++i) chunk0 |= static_cast<uint64_t>(pre[width_at + i]) << (8 * i);
    start = oh + width_at + width;
  } else {  // version, reserved, message count, reference count, chunk 0 size, padding to 16
    chunk0 = le32(pre + 8);
    start = oh + 16;
  }
  // v1: type (2), size (2), flags, 3 reserved; v2: type, size (2), flags, [creation order (2)]
  const std::size_t header = v2 ? 4 + ((flags & 0x04) ? 2 : 0) : 8;

  std::vector<Region> todo{{start, start + std::min(chunk0, size_)}};  // read() range-checks the end
  std::set<uint64_t> visited{start};
  uint64_t total = 0;
  for (int chunks = 0; !todo.empty(); ++chunks) {
    const Region r = todo.back();
    todo.pop_back();
    if (r.end - r.begin > kMaxChunk || (total += r.end - r.begin) > kMaxHeaderBytes) {
      fail(what + ": object header chunk too large to validate (over 1 MiB, or 16 MiB in total)", r.begin);
    }
    std::vector<uint8_t> chunk(r.end - r.begin);
    read(r.begin, chunk.data(), chunk.size());
    // A tail shorter than a message header is a gap (v2) or padding.
    for (std::size_t p = 0; chunk.size() - p >= header;) {
      const uint8_t* h = chunk.data() + p;
      const unsigned type = v2 ? h[0] : le16(h);
      const std::size_t size = v2 ? le16(h + 1) : le16(h + 2);
      const unsigned mflags = v2 ? h[3] : h[4];
      const uint64_t at = r.begin + p + header;
      p += header;
      if (size > chunk.size() - p) fail(what + ": object header message runs past its chunk", at - header);
      const std::span<const uint8_t> body(chunk.data() + p, size);
      p += size;
      if (type != 0x10) {
        visit(type, mflags, body, at);
        continue;
      }
      // Continuation: address and length of the next block of messages.
      if (size < 16) fail(what + ": continuation message truncated", at);
      const uint64_t block = absolute(le64(body.data()), at, what + ": continuation block");
      const uint64_t len = le64(body.data() + 8);
      if (len > size_ - block || (v2 && len < 8)) fail(what + ": continuation block outside the file", at + 8);
      if (!visited.insert(block).second) fail(what + ": continuation blocks form a cycle", at);
      if (chunks + static_cast<int>(todo.size()) >= kMaxChunks) fail(what + ": too many continuation blocks", at);
      if (v2) {
        uint8_t sig[4];
        read(block, sig, 4);
        if (std::memcmp(sig, "OCHK", 4) != 0) fail(what + ": continuation block has no OCHK signature", block);
        todo.push_back({block + 4, block + len - 4});  // the signature and checksum hold no messages
      } else {
        todo.push_back({block, block + len});
      }
    }
  }
}

void VlenGuard::check_attribute(hid_t obj, const std::string& name) {
  init();
  const std::string what = "attribute '" + name + "'";
  H5O_info_t info;
  if (H5Oget_info2(obj, &info, H5O_INFO_BASIC | H5O_INFO_HDR) < 0) {
    throw Error(what + ": cannot locate the object header of " + object_name(obj));
  }
  bool found = false;
  uint64_t dense_at = 0;
  for_each_message(info, what, [&](unsigned type, unsigned flags, std::span<const uint8_t> m, uint64_t at) {
    if (type == 0x0C) {  // attribute
      if (flags & 0x02) fail(what + ": shared attribute messages are not supported", at);
      found = check_attribute_message(m, at, name) || found;
    } else if (type == 0x15) {  // attribute info: a defined fractal heap address means dense storage
      const std::size_t heap_at = 2 + ((m.size() > 1 && (m[1] & 1)) ? 2 : 0);
      if (m.size() < heap_at + 8) fail(what + ": attribute info message truncated", at);
      if (le64(m.data() + heap_at) != kUndefined) dense_at = at;
    }
  });
  // libhdf5 reads only the dense storage once it exists, so compact messages prove nothing then.
  if (dense_at != 0) fail(what + ": attributes are in dense storage, which cannot be validated", dense_at);
  if (!found) fail(what + ": no attribute message of that name in the object header", base_ + info.addr);
}

void VlenGuard::check_dataset(hid_t dataset) {
  init();
  const std::string what = "dataset " + object_name(dataset);
  H5O_info_t info;
  if (H5Oget_info2(dataset, &info, H5O_INFO_BASIC) < 0) throw Error(what + ": cannot locate its object header");
  const uint64_t oh = base_ + info.addr;  // only for messages
  const hid_t type = H5Dget_type(dataset);
  const htri_t vstr = type < 0 ? -1 : H5Tis_variable_str(type);
  if (type >= 0) H5Tclose(type);
  if (vstr <= 0) fail(what + ": not a variable-length string dataset", oh);

  const hid_t dcpl = H5Dget_create_plist(dataset);
  const H5D_layout_t layout = dcpl < 0 ? H5D_LAYOUT_ERROR : H5Pget_layout(dcpl);
  const int external = dcpl < 0 ? -1 : H5Pget_external_count(dcpl);
  H5D_fill_value_t fill = H5D_FILL_VALUE_ERROR;
  if (dcpl < 0 || H5Pfill_value_defined(dcpl, &fill) < 0) fill = H5D_FILL_VALUE_ERROR;
  if (dcpl >= 0) H5Pclose(dcpl);
  if (layout == H5D_COMPACT) fail(what + ": compact variable-length string datasets are not supported", oh);
  if (layout == H5D_CHUNKED) fail(what + ": chunked variable-length string datasets are not supported", oh);
  if (layout != H5D_CONTIGUOUS || external != 0) {
    fail(what + ": only contiguous storage inside the file is supported", oh);
  }

  const hid_t space = H5Dget_space(dataset);
  const int rank = space < 0 ? -1 : H5Sget_simple_extent_ndims(space);
  const hssize_t points = space < 0 ? -1 : H5Sget_simple_extent_npoints(space);
  if (space >= 0) H5Sclose(space);
  if (rank < 0 || rank > 1 || points < 0) fail(what + ": expected a scalar or 1-D dataspace", oh);
  const uint64_t count = static_cast<uint64_t>(points);
  if (count == 0) return;

  const haddr_t offset = H5Dget_offset(dataset);  // absolute: libhdf5 adds the base address
  if (offset == HADDR_UNDEF) {
    // Never written: libhdf5 returns the fill value, null strings unless the user set one,
    // and a user-set vlen fill value is itself a heap descriptor, which is not validated here.
    if (fill == H5D_FILL_VALUE_DEFAULT || fill == H5D_FILL_VALUE_UNDEFINED) return;
    fail(what + ": storage not allocated and a user-defined fill value (not validated)", oh);
  }
  const hsize_t stored = H5Dget_storage_size(dataset);
  if (count > size_ / kDescriptor || stored != count * kDescriptor) {
    fail(what + ": " + str(count) + " strings need " + str(count * kDescriptor) + " bytes of descriptors, storage has " +
             str(stored),
         offset);
  }
  if (offset > size_ || stored > size_ - offset) fail(what + ": descriptors run past the end of the file", offset);
  std::vector<uint8_t> buf(std::min<uint64_t>(count, kBatch) * kDescriptor);
  for (uint64_t i = 0; i < count; i += kBatch) {
    const uint64_t n = std::min<uint64_t>(kBatch, count - i);
    const uint64_t at = offset + i * kDescriptor;
    read(at, buf.data(), n * kDescriptor);
    for (uint64_t j = 0; j < n; ++j) check_descriptor(&buf[j * kDescriptor], at + j * kDescriptor, what);
  }
}

}  // namespace specdec::h5
