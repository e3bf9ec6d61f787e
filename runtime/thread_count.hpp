#pragma once
// How many worker threads a run uses when --threads is 0: the cores this process may run on that
// other processes are not using now. OpenMP's threads spin at every barrier; a thread on a core
// another process holds makes its whole team wait for the scheduler, which on a loaded machine
// made a small model decode twenty times slower on all cores than on one.

#include <string>

namespace specdec {

struct MachineLoad {
  int cores = 1;          // cores this process may run on (its CPU affinity)
  int busy = 0;           // of those, occupied by other runnable processes (at most cores - 1)
  double load_1min = 0;   // the one-minute load average; 0 where the system does not say
};

// Now (Linux: sched_getaffinity and /proc/loadavg; elsewhere the hardware's cores, none busy).
// `busy` is the smaller of the runnable processes other than this one and the rounded one-minute
// load: a process that just started, or a load that has just ended, does not count.
MachineLoad machine_load();
// The same from the text of /proc/loadavg ("0.52 0.58 0.59 2/345 12345") and the usable cores;
// text it cannot read gives no busy core.
MachineLoad machine_load(const std::string& loadavg, int cores);

// The cores not busy, at least one.
int automatic_thread_count(const MachineLoad& load);

}  // namespace specdec
