#include "reference/io/atomic_file.hpp"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <system_error>

#include "reference/core/error.hpp"

namespace specdec {
namespace {

std::filesystem::path temporary_sibling(const std::filesystem::path& path) {
  // Unique per process and call, hidden, in the same directory so that rename is atomic.
  static std::atomic<unsigned long> counter{0};
  // Built by appending: GCC 12 warns falsely (-Wrestrict) on `"." + std::string&&`.
  std::string name = ".";
  name += path.filename().string();
  name += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
  return path.parent_path() / name;
}

}  // namespace

void write_path_atomically(const std::filesystem::path& path,
                           const std::function<void(const std::filesystem::path& temporary)>& write) {
  if (path.filename().empty()) {
    throw Error("cannot write '" + path.string() + "': not a file name");
  }
  const std::filesystem::path parent = path.parent_path().empty() ? "." : path.parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(parent, ec)) {
    throw Error("cannot write '" + path.string() + "': directory '" + parent.string() +
                "' does not exist");
  }
  if (std::filesystem::is_directory(path, ec)) {
    throw Error("cannot write '" + path.string() + "': a directory of that name exists");
  }
  const std::filesystem::path tmp = temporary_sibling(path);
  try {
    write(tmp);
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
      throw Error("cannot rename '" + tmp.string() + "' to '" + path.string() + "': " + ec.message());
    }
  } catch (...) {
    std::filesystem::remove(tmp, ec);
    throw;
  }
}

void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(std::ostream&)>& write) {
  write_path_atomically(path, [&](const std::filesystem::path& tmp) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot create '" + tmp.string() + "' to write '" + path.string() + "'");
    write(out);
    out.flush();
    if (!out) throw Error("write error on '" + path.string() + "' (disk full?)");
    out.close();
    if (!out) throw Error("write error on '" + path.string() + "' when closing the file");
  });
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  write_file_atomically(path, [content](std::ostream& out) {
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
  });
}

void write_directory_atomically(const std::filesystem::path& dir, const std::string& what,
                                const std::function<void(const std::filesystem::path& temporary)>& write) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path parent = dir.parent_path().empty() ? fs::path(".") : dir.parent_path();
  if (!fs::is_directory(parent, ec)) {
    throw Error("cannot save " + what + " to '" + dir.string() + "': directory '" + parent.string() + "' does not exist");
  }
  const fs::path tmp = temporary_sibling(dir);
  fs::remove_all(tmp, ec);
  try {
    fs::create_directory(tmp);
    write(tmp);
    fs::rename(tmp, dir);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp, ec);
    throw Error("cannot save " + what + " to '" + dir.string() + "': " + e.what());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace specdec
