#include "cli/monitor_options.hpp"

#include "reference/core/error.hpp"

namespace specdec::cli {

void add_monitor_options(po::options_description& desc, MonitorArgs& m) {
  desc.add_options()
      ("events", po::value(&m.events), "write one JSON line per decoding event (prefill, step, fallback, finish) to FILE.jsonl as the run goes, flushed each line; - = stdout (not with --json or --stream)")
      ("live", po::bool_switch(&m.live), "show a status line on stderr, rewritten in place: acceptance, AL, the K of the latest step, policy state, tokens/s (escape codes only on a terminal)");
}

Monitor::Monitor(const MonitorArgs& m, CommandIO& io, bool json, bool stream, std::size_t requests) {
  if (m.events == "-") {
    if (json) throw Error("--events -: stdout carries the --json report; write the events to a file (--events FILE.jsonl)");
    if (stream) throw Error("--events -: stdout carries the --stream text; write the events to a file (--events FILE.jsonl)");
  }
  if (m.live && stream) throw Error("--live redraws a line as the run goes, as --stream prints text; give one of them");
  if (m.events == "-") {
    events_ = std::make_unique<StepEventSink>(io.out);
  } else if (!m.events.empty()) {
    events_ = StepEventSink::open(m.events, "--events");
  }
  if (m.live) live_.emplace(io.err, true, io.err_is_terminal, requests);
}

Monitor::~Monitor() {
  if (live_) live_->done();
}

DecodeObserver* Monitor::observer(std::size_t key, uint32_t sequence) {
  if (!active()) return nullptr;
  auto s = std::make_unique<Sequence>();
  if (events_) {
    s->events.emplace(*events_, sequence);
    s->fanout.add(&*s->events);
  }
  if (live_) s->fanout.add(&*live_);
  DecodeObserver* o = s->fanout.get();
  sequences_[key] = std::move(s);
  return o;
}

void Monitor::release(std::size_t key) { sequences_.erase(key); }

void Monitor::close() {
  if (live_) live_->done();
  if (events_) events_->close();
}

}  // namespace specdec::cli
