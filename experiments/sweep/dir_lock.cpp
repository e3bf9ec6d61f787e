#include "experiments/sweep/dir_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "reference/core/error.hpp"

namespace specdec::sweep {

namespace fs = std::filesystem;

namespace {

// The holder's pid as it wrote it into the lock file ("" when it has not written it yet).
std::string holder_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string s(buf, static_cast<size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.find_first_not_of("0123456789") == std::string::npos ? s : "";
}

[[noreturn]] void being_written(const std::string& who, const fs::path& dir, int fd, const std::string& advice) {
  const std::string pid = holder_pid(fd);
  ::close(fd);
  throw Error(who + ": " + dir.string() + " is being written by another sweep (" + (pid.empty() ? "pid unknown" : "pid " + pid) +
              "); " + advice);
}

// Takes the lock of the open lock file `fd` without waiting; false when another process holds it.
bool try_lock(int fd, int operation, const fs::path& file) {
  while (::flock(fd, operation | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) return false;
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw Error(file.string() + ": cannot be locked (" + why + "); the results directory needs a file system with flock(2)");
  }
  return true;
}

}  // namespace

fs::path lock_file_path(const fs::path& dir) { return dir / kLockFileName; }

ResultsDirLock::ResultsDirLock(const fs::path& dir, const std::string& who) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) throw Error(who + ": " + dir.string() + " exists and is not a directory");
  fs::create_directories(dir, ec);
  if (ec) throw Error(who + ": " + dir.string() + " cannot be created: " + ec.message());
  const fs::path file = lock_file_path(dir);
  // No O_TRUNC: the file may be another process's lock; O_NOFOLLOW: a link there is not followed.
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) throw Error(who + ": " + file.string() + " cannot be opened: " + std::strerror(errno));
  if (!try_lock(fd, LOCK_EX, file)) being_written(who, dir, fd, "wait until it has finished, or give another --out directory");
  // Ours now: say who holds it, for the message of a second process.
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    // The lock holds without the pid; only the message of a second process is poorer.
  }
  fd_ = fd;
}

ResultsDirLock::~ResultsDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock; the file stays (see kLockFileName)
}

void check_not_being_written(const fs::path& dir, const std::string& who) {
  const fs::path file = lock_file_path(dir);
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return;  // no lock file: no sweep has written here since locks exist, or none can open it
  if (!try_lock(fd, LOCK_SH, file)) being_written(who, dir, fd, "wait until it has finished");
  ::close(fd);
}

}  // namespace specdec::sweep
