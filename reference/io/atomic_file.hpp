#pragma once
// Atomic file output: the content is written to a temporary name in the destination's directory,
// flushed to disk (fsync), and renamed into place (then the directory is flushed), so readers see
// either the old file or the complete new one, and a failure leaves nothing half-written behind.
// Only a new path or a regular file is ever replaced: a device node, pipe, socket, symbolic link
// or directory at the destination is an error. Temporary files left by a killed writer (their
// process is gone) are removed by the next write to the same destination.
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace specdec {

// Removes the temporary files and directories that writers of `path` left behind when their
// process died before renaming them (e.g. SIGKILL; a zombie counts as dead); returns how many.
// Writes in progress (their process is alive) are left alone. Every writer below calls it first.
int remove_stale_temporaries(const std::filesystem::path& path);

// Calls `write` with a binary stream onto a temporary file next to `path`, then renames it to
// `path`. If `write` throws or the stream fails, the temporary file is removed and the error
// (a specdec::Error naming `path` for I/O failures) propagates. The parent directory must exist.
void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(std::ostream&)>& write);
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

// For writers that open the file themselves (HDF5): `write` is given the temporary path to create,
// which is renamed to `path` when it returns; on any exception the temporary file is removed.
void write_path_atomically(const std::filesystem::path& path,
                           const std::function<void(const std::filesystem::path& temporary)>& write);

// A new directory (`dir` must not exist): `write` fills a hidden sibling directory, which is
// renamed to `dir` when it returns; on any exception the sibling is removed. `what` names the
// content in error messages ("checkpoint", "drafter head").
void write_directory_atomically(const std::filesystem::path& dir, const std::string& what,
                                const std::function<void(const std::filesystem::path& temporary)>& write);

}  // namespace specdec
