#pragma once
// Giving back the pages of a read-only file mapping once their bytes have been read: the whole
// pages inside [p, p + n) leave the process's resident set (madvise MADV_DONTNEED) and stay in
// the page cache, so a loader that converts tensor after tensor holds one copy of the weights, its
// own, rather than its own plus every page of the file it touched. A later read faults them back.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

namespace specdec {

inline void release_mapped_pages(const std::byte* p, std::size_t n) noexcept {
  static const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t first = (begin + page - 1) / page * page;  // whole pages only: a neighbour's bytes may share the edges
  const std::uintptr_t last = (begin + n) / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace specdec
