#include "cli/live_line.hpp"

#include <cstdio>

#include "experiments/sweep/progress.hpp"

namespace specdec::cli {

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// A policy state short enough to keep the line on one terminal row.
constexpr std::size_t kMaxStateChars = 32;

}  // namespace

LiveLine::LiveLine(std::ostream& out, bool enabled, bool terminal, std::size_t requests, std::chrono::milliseconds interval)
    : out_(out), enabled_(enabled), terminal_(terminal), requests_(requests), interval_(interval) {}

void LiveLine::on_prefill(const std::vector<int32_t>& /*prompt*/, int64_t /*prefill_ns*/) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!started_) {
    started_ = true;
    start_ = Clock::now();
  }
}

void LiveLine::on_sequential_step(const SequentialStep& step) {
  const std::lock_guard<std::mutex> lock(mutex_);
  ++tokens_;
  if (step.index == 0) return;  // the prefill's token
  ++steps_;
  ++verified_;
  last_step_ = step.index;
  last_planned_ = 0;  // sequential decoding: every step is plain
  maybe_draw();
}

void LiveLine::on_speculative_step(const SpeculativeStep& step) {
  const std::lock_guard<std::mutex> lock(mutex_);
  ++steps_;
  if (step.tree) drafted_ += step.tree->size();
  if (step.verify) {
    accepted_ += static_cast<int64_t>(step.verify->accepted_nodes.size());
    verified_ += static_cast<int64_t>(step.verify->emitted.size());
  } else {
    verified_ += static_cast<int64_t>(step.emitted.size());
  }
  tokens_ += static_cast<int64_t>(step.emitted.size());
  last_step_ = step.index;
  last_planned_ = step.planned_depth;
  last_policy_state_ = step.policy_state;
  maybe_draw();
}

void LiveLine::on_finish(const std::vector<int32_t>& /*output*/, const std::string& /*stop_reason*/) {
  const std::lock_guard<std::mutex> lock(mutex_);
  ++finished_;
  maybe_draw();
}

void LiveLine::on_fallback(const DrafterFallback& /*event*/) {
  const std::lock_guard<std::mutex> lock(mutex_);
  ++fallbacks_;
}

void LiveLine::set_requests(std::size_t requests) {
  const std::lock_guard<std::mutex> lock(mutex_);
  requests_ = requests;
}

void LiveLine::done() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!enabled_ || done_) return;
  done_ = true;
  draw();
  out_ << "\n";
  out_.flush();
}

std::string LiveLine::text() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return text_locked();
}

void LiveLine::maybe_draw() {
  if (!enabled_ || done_) return;
  const Clock::time_point now = Clock::now();
  if (drawn_ && now - last_draw_ < interval_) return;
  draw();
}

void LiveLine::draw() {
  last_draw_ = Clock::now();
  drawn_ = true;
  const std::string line = text_locked();
  if (terminal_) {
    out_ << "\r\033[K" << line;
  } else {
    // No escape codes off a terminal: spaces cover what a longer previous line left.
    out_ << '\r' << line;
    if (line.size() < last_width_) out_ << std::string(last_width_ - line.size(), ' ');
  }
  last_width_ = line.size();
  out_.flush();
}

std::string LiveLine::text_locked() const {
  const double elapsed = started_ ? std::chrono::duration<double>(Clock::now() - start_).count() : 0.0;
  std::string s = "live ";
  if (requests_ > 0) s += " " + std::to_string(finished_) + "/" + std::to_string(requests_) + " requests ";
  s += " step " + std::to_string(requests_ > 0 ? steps_ : last_step_);
  if (last_planned_ >= 0) {
    s += "  K " + (last_planned_ == 0 ? std::string("plain") : std::to_string(last_planned_));
    s += "  acceptance " + (drafted_ > 0 ? fixed(static_cast<double>(accepted_) / static_cast<double>(drafted_), 3) : std::string("-"));
  }
  s += "  AL " + (steps_ > 0 ? fixed(static_cast<double>(verified_) / static_cast<double>(steps_), 2) : std::string("-"));
  if (!last_policy_state_.empty()) {
    std::string state = last_policy_state_;
    if (state.size() > kMaxStateChars) state = state.substr(0, kMaxStateChars - 3) + "...";
    for (char& c : state) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';  // no control bytes
    }
    s += "  policy " + state;
  }
  if (fallbacks_ > 0) s += "  fallbacks " + std::to_string(fallbacks_);
  s += "  " + std::to_string(tokens_) + " tokens  " + fixed(elapsed > 0 ? static_cast<double>(tokens_) / elapsed : 0.0, 1) +
       " tok/s  " + sweep::format_duration(elapsed);
  return s;
}

}  // namespace specdec::cli
