#include "reference/io/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>

#include "reference/core/error.hpp"

namespace specdec {
namespace fs = std::filesystem;

namespace {

// Temporary names: ".<name>.tmp-<pid>-<n>", hidden, in the destination's directory (so rename is
// atomic), unique per process and call. The pid lets a later writer tell an orphan (its process
// is gone, e.g. killed) from a write in progress.
std::string temporary_prefix(const fs::path& path) {
  // Built by appending: GCC 12 warns falsely (-Wrestrict) on `"." + std::string&&`.
  std::string name = ".";
  name += path.filename().string();
  name += ".tmp-";
  return name;
}

fs::path temporary_sibling(const fs::path& path) {
  static std::atomic<unsigned long> counter{0};
  return path.parent_path() / (temporary_prefix(path) + std::to_string(::getpid()) + "-" +
                               std::to_string(counter.fetch_add(1)));
}

fs::path parent_of(const fs::path& path) { return path.parent_path().empty() ? fs::path(".") : path.parent_path(); }

// fsync on a path (a file or a directory); `what` names it for the error.
void sync_path(const fs::path& p, const std::string& what) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open '" + p.string() + "' to flush " + what + ": " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // EINVAL: the file system does not support fsync (some pseudo file systems): nothing to flush.
  if (rc != 0 && err != EINVAL) throw Error("cannot flush " + what + " '" + p.string() + "' to disk: " + std::strerror(err));
}

void sync_tree(const fs::path& dir) {
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() || e.is_directory()) sync_path(e.path(), "a written file");
  }
  sync_path(dir, "a written directory");
}

// The destination must be a new path or a regular file: renaming over a device node, a FIFO, a
// socket or a symbolic link would replace it instead of writing to it.
void check_replaceable(const fs::path& path) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (ec || st.type() == fs::file_type::not_found) return;
  const std::string where = "cannot write '" + path.string() + "': ";
  switch (st.type()) {
    case fs::file_type::regular: return;
    case fs::file_type::directory: throw Error(where + "a directory of that name exists");
    case fs::file_type::symlink:
      throw Error(where + "it is a symbolic link; give the file it points to (specdec replaces files, not links)");
    case fs::file_type::character:
    case fs::file_type::block:
      throw Error(where + "it is a device, not a regular file; specdec writes complete files only (give a file path)");
    case fs::file_type::fifo:
    case fs::file_type::socket:
      throw Error(where + "it is a pipe or socket, not a regular file; specdec writes complete files only");
    default: throw Error(where + "it exists and is not a regular file");
  }
}

bool process_gone(const std::string& pid_text) {
  if (pid_text.empty() || pid_text.size() > 9 || pid_text.find_first_not_of("0123456789") != std::string::npos) {
    return false;  // not one of ours
  }
  const long pid = std::stol(pid_text);
  if (pid <= 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0) return errno == ESRCH;
  // A killed writer can linger as a zombie (its parent died too and nothing has reaped it yet):
  // it exists for kill() but will never finish its write. State 'Z' or 'X' in /proc/PID/stat.
  std::ifstream stat("/proc/" + pid_text + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const std::size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && (line[paren + 2] == 'Z' || line[paren + 2] == 'X');
}

}  // namespace

int remove_stale_temporaries(const fs::path& path) {
  const std::string prefix = temporary_prefix(path);
  std::error_code ec;
  int removed = 0;
  fs::directory_iterator it(parent_of(path), ec);
  if (ec) return 0;
  for (const fs::directory_entry& e : it) {
    const std::string name = e.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = name.substr(prefix.size());  // "<pid>-<n>"
    const std::size_t dash = rest.find('-');
    if (dash == std::string::npos || !process_gone(rest.substr(0, dash))) continue;
    std::error_code rm;
    if (fs::remove_all(e.path(), rm) > 0 && !rm) ++removed;
  }
  return removed;
}

void write_path_atomically(const fs::path& path, const std::function<void(const fs::path& temporary)>& write) {
  if (path.filename().empty()) {
    throw Error("cannot write '" + path.string() + "': not a file name");
  }
  const fs::path parent = parent_of(path);
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) {
    throw Error("cannot write '" + path.string() + "': directory '" + parent.string() + "' does not exist");
  }
  check_replaceable(path);
  remove_stale_temporaries(path);
  const fs::path tmp = temporary_sibling(path);
  try {
    write(tmp);
    // The content reaches the disk before the name does, so a crash leaves the old file or the new
    // one, never a renamed empty file.
    sync_path(tmp, "the file");
    check_replaceable(path);  // again: the destination may have been replaced meanwhile
    fs::rename(tmp, path, ec);
    if (ec) {
      throw Error("cannot rename '" + tmp.string() + "' to '" + path.string() + "': " + ec.message());
    }
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  sync_path(parent, "the directory");
}

void write_file_atomically(const fs::path& path, const std::function<void(std::ostream&)>& write) {
  write_path_atomically(path, [&](const fs::path& tmp) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot create '" + tmp.string() + "' to write '" + path.string() + "'");
    write(out);
    out.flush();
    if (!out) throw Error("write error on '" + path.string() + "' (disk full?)");
    out.close();
    if (!out) throw Error("write error on '" + path.string() + "' when closing the file");
  });
}

void write_file_atomically(const fs::path& path, std::string_view content) {
  write_file_atomically(path, [content](std::ostream& out) {
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
  });
}

void write_directory_atomically(const fs::path& dir, const std::string& what,
                                const std::function<void(const fs::path& temporary)>& write) {
  std::error_code ec;
  const fs::path parent = parent_of(dir);
  if (!fs::is_directory(parent, ec)) {
    throw Error("cannot save " + what + " to '" + dir.string() + "': directory '" + parent.string() + "' does not exist");
  }
  if (fs::exists(fs::symlink_status(dir, ec))) {
    throw Error("cannot save " + what + " to '" + dir.string() + "': it already exists");
  }
  remove_stale_temporaries(dir);
  const fs::path tmp = temporary_sibling(dir);
  try {
    fs::create_directory(tmp);
    write(tmp);
    sync_tree(tmp);
    fs::rename(tmp, dir);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp, ec);
    throw Error("cannot save " + what + " to '" + dir.string() + "': " + e.what());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  sync_path(parent, "the directory");
}

}  // namespace specdec
