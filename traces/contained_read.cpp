#include "traces/contained_read.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "reference/core/error.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define SPECDEC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPECDEC_ASAN 1
#endif
#endif

#ifdef SPECDEC_ASAN
// The sanitizers' hook for a fatal report; a fuzzer sets it to record the input as its own crash.
extern "C" void __sanitizer_set_death_callback(void (*callback)(void));
#endif

namespace specdec {
namespace {

// Child exit codes: read returned or threw specdec::Error / threw something else.
constexpr int kFinished = 0;
constexpr int kOtherException = 3;
constexpr int kOutOfMemory = 4;

// This process's current virtual size, from /proc/self/statm (pages).
uint64_t virtual_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  statm >> pages;
  return pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

void contain_read(const std::filesystem::path& file, const std::function<void()>& read) {
  std::error_code ec;
  const uint64_t file_bytes = std::filesystem::file_size(file, ec);
  // SPECDEC_READ_TIMEOUT_S overrides the base (the fuzzer shortens it).
  const char* base_env = std::getenv("SPECDEC_READ_TIMEOUT_S");
  const long base = base_env != nullptr && std::atol(base_env) > 0 ? std::atol(base_env) : 30;
  const auto budget = std::chrono::seconds(base + static_cast<long>(ec ? 0 : file_bytes >> 26));
  // Memory: what this process already maps, plus 2 GiB, plus 16 bytes per byte of file.
  const uint64_t memory = virtual_bytes() + (uint64_t{2} << 30) + (ec ? 0 : 16 * file_bytes);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(file.string() + ": cannot check the file in a child process: " + std::strerror(errno));
  if (pid == 0) {
    // A crash here is the file's, reported to the parent by the signal: no handler inherited from
    // the parent (a fuzzer's, which would record it as the parent's own crash) may run.
    ::signal(SIGABRT, SIG_DFL);
#ifdef SPECDEC_ASAN
    __sanitizer_set_death_callback(nullptr);
#else  // ASan reserves terabytes of address space up front; it bounds allocations itself
    const rlimit as{memory, memory};
    ::setrlimit(RLIMIT_AS, &as);
#endif
    int code = kFinished;
    try {
      read();
    } catch (const Error&) {
    } catch (const std::bad_alloc&) {
      code = kOutOfMemory;
    } catch (...) {
      code = kOtherException;
    }
    ::_exit(code);  // no exit handlers: libhdf5's would flush state the child shares with its parent
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + budget;
  auto pause = std::chrono::microseconds(50);
  while (true) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) throw Error(file.string() + ": lost the child process checking the file");
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      throw Error(file.string() + ": reading it did not finish in " + std::to_string(budget.count()) +
                  " s (libhdf5 loops on some corrupt files); the file is corrupt");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
  if (WIFSIGNALED(status)) {
    throw Error(file.string() + ": reading it crashed libhdf5 (signal " + std::to_string(WTERMSIG(status)) + ", " +
                ::strsignal(WTERMSIG(status)) + "); the file is corrupt");
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == kOutOfMemory) {
    throw Error(file.string() + ": reading it needed more than " + std::to_string(memory >> 20) +
                " MiB of memory; the file is corrupt");
  }
  if (code != kFinished) {
    throw Error(file.string() + ": reading it failed unexpectedly (child exit " + std::to_string(code) +
                "); the file is corrupt or specdec has a bug");
  }
}

}  // namespace specdec
