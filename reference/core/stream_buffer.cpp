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
  // Not rounded up to the alignment: a tail of up to 2 MiB per matrix would become resident once a
  // huge page covered it, which over a model's hundreds of matrices is a tenth of a small model.
  void* p = nullptr;
  if (::posix_memalign(&p, align, std::max<std::size_t>(bytes, 1)) != 0) throw std::bad_alloc();
  StreamBuffer buffer(static_cast<std::byte*>(p));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // The whole huge pages inside the buffer; the tail keeps 4 KiB pages. Failure leaves 4 KiB pages.
  if (align == kHugePage) ::madvise(buffer.get(), bytes / kHugePage * kHugePage, MADV_HUGEPAGE);
#endif
  return buffer;
}

}  // namespace specdec
