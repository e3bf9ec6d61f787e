#pragma once
// A JSON-lines stream of per-step events for dashboards (`--events FILE.jsonl`): one object per
// line, flushed as it is written, so that a dashboard can tail the file while a run decodes.
//
//   {"event":"prefill","sequence":0,"prompt_tokens":12,"ms":3.1,"t_s":0.003}
//   {"event":"step","sequence":0,"step":1,"position":13,"planned_depth":2,"drafted_depth":2,
//    "drafted":2,"accepted":1,"emitted":2,"policy_state":"...","draft_ms":0.4,"verify_ms":1.2,
//    "running_acceptance":0.5,"running_al":2.0,"tokens":3,"t_s":0.005}
//   {"event":"fallback","sequence":0,"step":2,"drafter":"<Proposer::name()>","reason":"failed: ...","next":"plain decoding","t_s":...}
//   {"event":"finish","sequence":0,"tokens":32,"stop_reason":"max_tokens","steps":17,"drafted":20,
//    "accepted":14,"al":1.82,"tokens_per_s":950.3,"fallbacks":0,"t_s":0.04}
//
// A "step" is a verification step after the prefill (GenerationStats::steps; the first token,
// which the prefill gives, is counted in "tokens" but has no step of its own), so the steps'
// "emitted" add up to the generated tokens − 1 and their "accepted" to the accepted drafts.
// "planned_depth" is the depth the speculation policy chose (0: a plain step), "drafted_depth" the
// depth the draft reached. "policy_state" appears only when a policy reports one. "running_*" are
// over this sequence so far; "running_al" counts every token a step verified (bonus included,
// before an EOS / max-tokens cut), as GenerationStats::acceptance_length. "t_s": seconds since
// the stream was opened. Memory is bounded: a sequence keeps running counters only.
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>

#include "reference/decoding/decode_observer.hpp"

namespace specdec {

// Where the events go: a stream shared by every sequence of a run (batch requests write to it
// from the decoding threads; each line is written whole under a lock and flushed).
class StepEventSink {
 public:
  // Writes to `out`, which must outlive the sink.
  explicit StepEventSink(std::ostream& out);
  // Opens `path` for writing (truncating it). Throws specdec::Error when the path is a directory
  // or cannot be opened, naming `what` (e.g. "--events").
  static std::unique_ptr<StepEventSink> open(const std::string& path, const std::string& what = "--events");
  ~StepEventSink();
  StepEventSink(const StepEventSink&) = delete;
  StepEventSink& operator=(const StepEventSink&) = delete;

  // Writes one line (a JSON object without its newline) and flushes. Never throws (observers run
  // inside the decoding loop, on its threads): a failed stream (a full disk) drops the lines after
  // it and is reported by close().
  void write_line(const std::string& line);
  // Flushes; throws specdec::Error naming the file when a write failed.
  void close();
  // Seconds since the sink was made.
  double elapsed_s() const;

 private:
  std::unique_ptr<std::ostream> owned_;
  std::ostream* out_;
  std::string path_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  bool failed_ = false;
};

// The events of one sequence (one per decoding run or batch request).
class StepEventObserver final : public DecodeObserver {
 public:
  StepEventObserver(StepEventSink& sink, uint32_t sequence) : sink_(sink), sequence_(sequence) {}

  void on_prefill(const std::vector<int32_t>& prompt, int64_t prefill_ns) override;
  void on_sequential_step(const SequentialStep& step) override;
  void on_speculative_step(const SpeculativeStep& step) override;
  void on_finish(const std::vector<int32_t>& output, const std::string& stop_reason) override;
  void on_fallback(const DrafterFallback& event) override;

 private:
  struct StepFields {
    int index = 0;
    int32_t position = 0;
    int planned_depth = 0, drafted_depth = 0, drafted = 0, accepted = 0, emitted = 0, verified = 0;
    const std::string* policy_state = nullptr;
    int64_t draft_ns = 0, verify_ns = 0;
  };
  void step(const StepFields& f);

  StepEventSink& sink_;
  uint32_t sequence_;
  // Running counters (nothing per step is kept).
  int64_t steps_ = 0, drafted_ = 0, accepted_ = 0, verified_ = 0, tokens_ = 0, fallbacks_ = 0;
  double decode_start_s_ = -1;  // sink time when the prefill ended
};

}  // namespace specdec
