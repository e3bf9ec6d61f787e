#pragma once
// `--live` (generate, batch): one status line on stderr rewritten in place as a run decodes, at
// most ten times a second (as `specdec batch`'s progress bar, cli/batch_progress.hpp):
//
//   live  step 14  K 2  acceptance 0.714  AL 2.43  policy ema=0.71  34 tokens  812.5 tok/s  0s
//
// acceptance (accepted / drafted drafts) and AL (tokens per verification step, bonus included) are
// over the whole run so far, every sequence of a batch together; K is the depth the speculation
// policy planned for the latest step ("plain" for a step that drafted nothing) and "policy" its
// state then. A batch adds "3/16 requests". On a terminal each update starts with "\r\033[K"
// (return, clear the line); forced onto anything else (--live with stderr redirected) it starts
// with "\r" and pads with spaces over a longer previous line, never writing an escape code.
// done() draws the last state and ends the line with a newline. Thread-safe (a batch's drafters
// report from their threads).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>

#include "reference/decoding/decode_observer.hpp"

namespace specdec::cli {

class LiveLine final : public DecodeObserver {
 public:
  // `enabled`: draw at all (off: nothing is ever written). `terminal`: `out` is a terminal.
  // `requests`: the batch's request count (0: one sequence, not shown). `interval`: the least time
  // between two redraws.
  LiveLine(std::ostream& out, bool enabled, bool terminal, std::size_t requests = 0,
           std::chrono::milliseconds interval = std::chrono::milliseconds(100));

  void on_prefill(const std::vector<int32_t>& prompt, int64_t prefill_ns) override;
  void on_sequential_step(const SequentialStep& step) override;
  void on_speculative_step(const SpeculativeStep& step) override;
  void on_finish(const std::vector<int32_t>& output, const std::string& stop_reason) override;
  void on_fallback(const DrafterFallback& event) override;

  // A batch's request count, once known (shown as "finished/requests").
  void set_requests(std::size_t requests);
  // The last redraw and a newline (once; nothing when disabled).
  void done();
  // The line as it would be drawn now (without \r or escapes).
  std::string text() const;

 private:
  using Clock = std::chrono::steady_clock;
  void maybe_draw();  // under the lock
  void draw();        // under the lock
  std::string text_locked() const;

  std::ostream& out_;
  bool enabled_, terminal_;
  std::size_t requests_;
  Clock::duration interval_;
  mutable std::mutex mutex_;
  bool started_ = false, drawn_ = false, done_ = false;
  Clock::time_point start_, last_draw_;
  int64_t steps_ = 0, drafted_ = 0, accepted_ = 0, verified_ = 0, tokens_ = 0, finished_ = 0, fallbacks_ = 0;
  int last_step_ = 0;
  int last_planned_ = -1;  // -1: no step yet
  std::string last_policy_state_;
  std::size_t last_width_ = 0;
};

}  // namespace specdec::cli
