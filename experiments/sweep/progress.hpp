#pragma once
// Progress of a sweep: on a terminal a bar redrawn in place (counts, percent, elapsed, ETA, the
// run in progress); otherwise a plain line at the start, every `interval_s` seconds and at the end,
// so that logs (e.g. of a Slurm job) show a long sweep is alive.
#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace specdec::sweep {

class Progress {
 public:
  // `total` runs to do in this process, `skipped` already done by an earlier one.
  Progress(std::ostream& out, bool terminal, int64_t total, int64_t skipped, double interval_s);
  void start_run(const std::string& what);
  void finish_run();
  void done();

 private:
  using Clock = std::chrono::steady_clock;
  void draw(bool force);
  std::string eta() const;

  std::ostream& out_;
  bool terminal_;
  int64_t total_, skipped_, finished_ = 0;
  double interval_s_;
  std::string current_;
  Clock::time_point start_, last_line_;
};

// "42s", "3m05s", "1h02m".
std::string format_duration(double seconds);

}  // namespace specdec::sweep
