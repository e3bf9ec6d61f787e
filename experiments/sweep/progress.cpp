#include "experiments/sweep/progress.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace specdec::sweep {

std::string format_duration(double s) {
  char buf[32];
  const long t = std::lround(std::max(0.0, s));
  if (t < 60) std::snprintf(buf, sizeof buf, "%lds", t);
  else if (t < 3600) std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
  return buf;
}

Progress::Progress(std::ostream& out, bool terminal, int64_t total, int64_t skipped, double interval_s)
    : out_(out), terminal_(terminal), total_(total), skipped_(skipped), interval_s_(interval_s),
      start_(Clock::now()), last_line_(start_) {
  if (!terminal_) {
    out_ << "sweep: " << total_ << " runs to do" << (skipped_ ? ", " + std::to_string(skipped_) + " already done" : "") << "\n";
    out_.flush();
  }
}

std::string Progress::eta() const {
  if (finished_ == total_) return "0s";
  if (finished_ == 0) return "?";
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  return format_duration(elapsed / finished_ * (total_ - finished_));
}

void Progress::draw(bool force) {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const int pct = total_ ? static_cast<int>(100 * finished_ / total_) : 100;
  if (terminal_) {
    const int width = 30, filled = total_ ? static_cast<int>(width * finished_ / total_) : width;
    std::string bar(filled, '#');
    bar.resize(width, '.');
    std::string what = current_.substr(0, 40);
    out_ << "\r\033[K[" << bar << "] " << finished_ << "/" << total_ << " (" << pct << "%) " << format_duration(elapsed)
         << " elapsed, ETA " << eta() << (what.empty() ? "" : "  " + what);
    out_.flush();
    return;
  }
  const double since = std::chrono::duration<double>(Clock::now() - last_line_).count();
  if (!force && since < interval_s_) return;
  last_line_ = Clock::now();
  out_ << "sweep: " << finished_ << "/" << total_ << " runs done (" << pct << "%), " << format_duration(elapsed)
       << " elapsed, ETA " << eta() << "\n";
  out_.flush();
}

void Progress::start_run(const std::string& what) {
  current_ = what;
  if (terminal_) draw(true);
}

void Progress::finish_run() {
  ++finished_;
  draw(false);
}

void Progress::done() {
  current_.clear();
  if (terminal_) {
    draw(true);
    out_ << "\n";
  } else {
    draw(true);
  }
  out_.flush();
}

}  // namespace specdec::sweep
