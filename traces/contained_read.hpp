#pragma once
// Runs a read of an untrusted file once in a child process first. libhdf5 1.10 has memory-safety
// bugs in its metadata decoding (attribute messages, B-tree and heap sizes) that no check of ours
// can reach before libhdf5 does; a crash, hang or runaway allocation there must not take down
// the run that reads the file. The child has a time and memory budget; when it ends normally
// (success or a specdec::Error), the read is safe to repeat in this process, where it gives the
// same result, and the caller does so.
#include <filesystem>
#include <functional>
#include <string>

namespace specdec {

// Runs `read` in a forked child. Returns normally when the child finished (whatever `read`
// threw). Throws specdec::Error "<file>: ..." when the child crashed (a signal), ran out of its
// memory budget, or ran past its time budget (30 s, or SPECDEC_READ_TIMEOUT_S, plus 1 s per
// 64 MiB of file), naming what happened. `read` must not write anything the parent relies on: the child's memory is its own.
void contain_read(const std::filesystem::path& file, const std::function<void()>& read);

}  // namespace specdec
