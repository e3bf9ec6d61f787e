#pragma once
// Memory for data that is streamed from DRAM once per token (weights, the bandwidth probe):
// 64-byte aligned, and from 2 MiB up placed on 2 MiB boundaries and marked for transparent huge
// pages where the kernel offers them (Linux madvise). A decode touches every page of the weights
// once per token: with 4 KiB pages that is a TLB walk every 64 cache lines, which costs a
// measurable part of the bandwidth. The advice is only advice; contents are uninitialised.
#include <cstddef>
#include <memory>

namespace specdec {

struct FreeStreamBuffer {
  void operator()(std::byte* p) const;
};
using StreamBuffer = std::unique_ptr<std::byte[], FreeStreamBuffer>;

// At least max(bytes, 1) bytes; throws std::bad_alloc when the allocation fails.
StreamBuffer allocate_stream_buffer(std::size_t bytes);

// Faults in the whole pages inside [p, p + bytes) of memory allocated elsewhere (an fp32 weight
// matrix about to be filled) writable, in one call (Linux MADV_POPULATE_WRITE, 5.14 and later):
// one trap per 4 KiB page costs about a sixth of loading a 2 GB fp32 model. Contents are kept;
// only advice (ignored where the kernel lacks it).
void prefault_for_writing(void* p, std::size_t bytes);

}  // namespace specdec
