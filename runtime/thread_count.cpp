#include "runtime/thread_count.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace specdec {

MachineLoad machine_load(const std::string& loadavg, int cores) {
  MachineLoad m;
  m.cores = std::max(1, cores);
  // The load averages, then runnable / all tasks (the reader is one of the runnable).
  std::istringstream in(loadavg);
  double l1 = 0, l5 = 0, l15 = 0;
  long running = 0;
  char slash = 0;
  if (in >> l1 >> l5 >> l15 >> running >> slash && slash == '/' && std::isfinite(l1) && l1 >= 0) {
    m.load_1min = l1;
    const long others = std::min(running - 1, std::lround(std::min(l1, 1e6)));
    m.busy = static_cast<int>(std::clamp<long>(others, 0, m.cores - 1));
  }
  return m;
}

MachineLoad machine_load() {
  int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::string text;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) cores = std::max(1, CPU_COUNT(&set));
  std::ifstream f("/proc/loadavg");
  std::getline(f, text);
#endif
  return machine_load(text, cores);
}

int automatic_thread_count(const MachineLoad& load) { return std::max(1, load.cores - load.busy); }

}  // namespace specdec
