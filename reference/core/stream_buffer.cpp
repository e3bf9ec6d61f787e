#include "reference/core/stream_buffer.hpp"

#include <algorithm>
#include <cstdint>
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

void prefault_for_writing(void* p, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  constexpr std::uintptr_t kPage = 4096;
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t first = (begin + kPage - 1) / kPage * kPage;
  const std::uintptr_t last = (begin + bytes) / kPage * kPage;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_WRITE);
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace specdec
