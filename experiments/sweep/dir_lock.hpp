#pragma once
// One writer per results directory. Two `specdec sweep` processes on one --out (a Slurm array
// resubmitted while its first tasks still run) would each run every missing run and append its
// rows twice; a sweep holds an exclusive flock(2) on a lock file inside the directory for as long as
// it writes there, and a second one is refused before it touches anything. The kernel releases
// the lock when its holder dies, so a killed sweep resumes without clean-up. Shards of one sweep
// write distinct directories and run side by side.
#include <filesystem>
#include <string>

namespace specdec::sweep {

// The lock file inside a results directory. It is left in place when the holder ends: removing it
// would let a later process lock a new file while another still holds the old one.
inline constexpr const char* kLockFileName = ".specdec-sweep.lock";
std::filesystem::path lock_file_path(const std::filesystem::path& dir);

class ResultsDirLock {
 public:
  // Creates `dir` when it does not exist (its parents too), then takes the lock. Throws
  // specdec::Error "<who>: <dir> is being written by another sweep (pid N); ..." when another
  // process holds it, before anything in the directory is changed.
  ResultsDirLock(const std::filesystem::path& dir, const std::string& who);
  ~ResultsDirLock();
  ResultsDirLock(const ResultsDirLock&) = delete;
  ResultsDirLock& operator=(const ResultsDirLock&) = delete;

 private:
  int fd_ = -1;
};

// Throws the same error when a live process holds the lock of `dir` (a shard still being written
// is not merged). Changes nothing; a directory without a lock file is not being written.
void check_not_being_written(const std::filesystem::path& dir, const std::string& who);

}  // namespace specdec::sweep
