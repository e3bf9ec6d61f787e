#pragma once
// --events FILE.jsonl and --live (generate, batch): watching a run as it decodes.
//   --events FILE  one JSON line per event (prefill, step, fallback, finish) of every sequence,
//                  flushed as written (runtime/step_events.hpp). "-" writes them to stdout, ahead
//                  of the command's report; not with --json or --stream, whose stdout must stay
//                  theirs alone. The file is truncated when the run starts (it is a stream, not
//                  written atomically); a directory or a path that cannot be opened is an error
//                  before anything is loaded.
//   --live         a status line on stderr rewritten in place (cli/live_line.hpp). Off unless
//                  asked for, also on a terminal; escape codes only when stderr is a terminal.
//                  Not with --stream (both write as the run goes). In `batch` it takes the place
//                  of the progress bar.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "cli/live_line.hpp"
#include "cli/options.hpp"
#include "runtime/observer_fanout.hpp"
#include "runtime/step_events.hpp"

namespace specdec::cli {

struct MonitorArgs {
  std::string events;  // "" = none, "-" = stdout
  bool live = false;
};

void add_monitor_options(po::options_description& desc, MonitorArgs& m);

// What watches a run: the events stream and the live line, opened from MonitorArgs. Construct it
// before loading models, so that a bad --events path fails at once.
class Monitor {
 public:
  // `json` / `stream`: --json / --stream were given (checked against --events -, --live).
  // `requests`: a batch's request count (0: one sequence).
  Monitor(const MonitorArgs& m, CommandIO& io, bool json, bool stream, std::size_t requests = 0);
  // Ends the live line (so that an error message starts on a line of its own).
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  bool live() const { return live_.has_value(); }
  // A batch's request count, once known (the live line shows it).
  void set_requests(std::size_t requests) {
    if (live_) live_->set_requests(requests);
  }
  bool active() const { return events_ || live_; }
  // A new observer for the sequence `key` (a batch's request index; 0 for generate), whose events
  // carry `sequence` (its sequence id); null when nothing watches. Valid until release(key) or
  // the Monitor's end.
  DecodeObserver* observer(std::size_t key, uint32_t sequence);
  // Frees the observer of a finished sequence (a batch's memory stays bounded by those in flight).
  void release(std::size_t key);
  // Ends the live line and checks that every event was written (throws specdec::Error if not).
  void close();

 private:
  struct Sequence {
    std::optional<StepEventObserver> events;
    ObserverFanout fanout;
  };
  std::unique_ptr<StepEventSink> events_;
  std::optional<LiveLine> live_;
  std::unordered_map<std::size_t, std::unique_ptr<Sequence>> sequences_;  // in flight
};

}  // namespace specdec::cli
