#pragma once
// A whole regular file mapped read-only, as the weight-file readers (safetensors, GGUF) hold it.
// Opening refuses what is not a regular file (a FIFO does not block) and a file shorter than the
// format's header. release() gives back the pages of a byte range once read: the whole pages
// inside it leave the process's resident set (madvise MADV_DONTNEED) and stay in the page cache,
// so a loader that converts tensor after tensor holds one copy of the weights, its own, rather
// than its own plus every page of the file it touched. A later read faults them back.
#include <cstddef>
#include <filesystem>
#include <string>

namespace specdec {

class MappedFile {
 public:
  MappedFile() = default;
  // `kind` names the file in the open error ("GGUF file"); a file under `min_bytes` is refused as
  // "shorter than <shorter_than>".
  MappedFile(const std::filesystem::path& path, const std::string& kind, std::size_t min_bytes,
             const std::string& shorter_than);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  // Gives back the whole pages inside [data() + offset, data() + offset + n).
  void release(std::size_t offset, std::size_t n) const noexcept;

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace specdec
