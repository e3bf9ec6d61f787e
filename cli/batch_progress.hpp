#pragma once
// Progress of `specdec batch` on a terminal: requests finished of the total, tokens per second so
// far and the elapsed time, redrawn in place (as the sweep's bar, experiments/sweep/progress.hpp)
// at most ten times a second. Disabled (nothing written) off a terminal or with --json.
#include <chrono>
#include <cstddef>
#include <ostream>

namespace specdec::cli {

class BatchProgress {
 public:
  BatchProgress(std::ostream& out, bool enabled, std::size_t total);
  // A request finished with `tokens` generated tokens.
  void finished(std::size_t tokens);
  // The last redraw and a newline, so that what follows starts on a line of its own.
  void done();

 private:
  using Clock = std::chrono::steady_clock;
  void draw();

  std::ostream& out_;
  bool enabled_;
  std::size_t total_, finished_ = 0, tokens_ = 0;
  Clock::time_point start_, last_draw_;
};

}  // namespace specdec::cli
