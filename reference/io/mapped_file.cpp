#include "reference/io/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "reference/core/error.hpp"

namespace specdec {

MappedFile::MappedFile(const std::filesystem::path& path, const std::string& kind, std::size_t min_bytes,
                       const std::string& shorter_than) {
  const std::string file = path.string();
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused as not a regular file below.
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error("cannot open " + kind + " '" + file + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error("'" + file + "' is not a regular file");
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size < min_bytes) {
    ::close(fd);
    throw Error(file + ": file is " + std::to_string(size) + " bytes, shorter than " + shorter_than);
  }
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);  // the mapping keeps the file open
  if (m == MAP_FAILED) throw Error("cannot map '" + file + "': " + std::strerror(errno));
  data_ = static_cast<const std::byte*>(m);
  size_ = size;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::release(std::size_t offset, std::size_t n) const noexcept {
  if (data_ == nullptr || offset > size_ || n > size_ - offset) return;
  static const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(data_ + offset);
  // Whole pages only: a neighbouring tensor's bytes may share the edge pages.
  const std::uintptr_t first = (begin + page - 1) / page * page;
  const std::uintptr_t last = (begin + n) / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace specdec
