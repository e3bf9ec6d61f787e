#include "cli/batch_progress.hpp"

#include <cstdio>
#include <string>

#include "experiments/sweep/progress.hpp"

namespace specdec::cli {

BatchProgress::BatchProgress(std::ostream& out, bool enabled, std::size_t total)
    : out_(out), enabled_(enabled), total_(total), start_(Clock::now()), last_draw_(start_) {
  if (enabled_) draw();
}

void BatchProgress::finished(std::size_t tokens) {
  ++finished_;
  tokens_ += tokens;
  if (enabled_ && (finished_ == total_ || Clock::now() - last_draw_ >= std::chrono::milliseconds(100))) draw();
}

void BatchProgress::done() {
  if (!enabled_) return;
  draw();
  out_ << "\n";
  out_.flush();
}

void BatchProgress::draw() {
  last_draw_ = Clock::now();
  const double elapsed = std::chrono::duration<double>(last_draw_ - start_).count();
  const int width = 30;
  const int filled = total_ ? static_cast<int>(width * finished_ / total_) : width;
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(width, '.');
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.1f", elapsed > 0 ? static_cast<double>(tokens_) / elapsed : 0.0);
  out_ << "\r\033[K[" << bar << "] " << finished_ << "/" << total_ << " requests, " << tokens_ << " tokens, " << rate
       << " tok/s, " << sweep::format_duration(elapsed) << " elapsed";
  out_.flush();
}

}  // namespace specdec::cli
