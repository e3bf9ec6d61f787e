#include "reference/core/stream_buffer.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace specdec {

void FreeStreamBuffer::operator()(std::byte* p) const { std::free(p); }

StreamBuffer allocate_stream_buffer(std::size_t bytes) {
  constexpr std::size_t kLine = 64, kHugePage = std::size_t{2} << 20;
  const std::size_t align = bytes >= kHugePage ? kHugePage : kLine;
  // aligned_alloc wants a size that is a multiple of the alignment.
  const std::size_t size = (std::max<std::size_t>(bytes, 1) + align - 1) / align * align;
  StreamBuffer buffer(static_cast<std::byte*>(std::aligned_alloc(align, size)));
  if (!buffer) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (align == kHugePage) ::madvise(buffer.get(), size, MADV_HUGEPAGE);  // failure leaves 4 KiB pages
#endif
  return buffer;
}

}  // namespace specdec
