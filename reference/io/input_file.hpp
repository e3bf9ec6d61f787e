#pragma once
// Reading whole files that come from elsewhere. Every reader of a user's file goes through here, so
// that a device, a pipe or a directory at the path is refused before it is opened (a FIFO would
// block the open forever, /dev/zero would never end) and the size is bounded before anything is
// allocated for it.
#include <cstdint>
#include <string>

namespace specdec {

// The largest text file (JSON, tokenizer, prompt, spec) any reader accepts: 1 GiB.
inline constexpr uint64_t kMaxInputFileBytes = uint64_t(1) << 30;

// An Error naming `what` and `path` unless `path` is a regular file (after following links) of at
// most `max_bytes` bytes. Returns its size.
uint64_t check_input_file(const std::string& path, const std::string& what, uint64_t max_bytes = kMaxInputFileBytes);

// The whole file as bytes, after check_input_file.
std::string read_input_file(const std::string& path, const std::string& what, uint64_t max_bytes = kMaxInputFileBytes);

}  // namespace specdec
