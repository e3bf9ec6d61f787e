#pragma once
// A batched run of one method over many prompts, as `specdec batch`, a sweep cell with a
// concurrency and Python's generate_batch run it: the requests (all at once, or Poisson arrivals
// drawn from the seed) and the run on the loaded target. The decoding loop is
// reference/decoding/batched.hpp; what a run reports is batch_report.hpp.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "reference/decoding/batched.hpp"
#include "runtime/decode_request.hpp"
#include "runtime/method_runner.hpp"

namespace specdec {

// Sequences in flight at most. Each holds a KV cache for its whole length, so a larger B is a
// typo (or an out-of-memory crash) rather than an experiment; serving engines run a few hundred.
inline constexpr int kMaxConcurrency = 4096;
// Requests in one run at most (their results are kept until the run ends).
inline constexpr int64_t kMaxBatchRequests = 10'000'000;

// Throws specdec::Error naming `what` (e.g. "--concurrency") unless 1 <= b <= kMaxConcurrency.
void check_concurrency(int64_t b, const std::string& what);

// Arrival times (seconds from the run's start, non-decreasing) of n requests of a Poisson process
// of `rate` requests per second: exponential gaps -ln(u) / rate, u drawn by the counter-based
// generator keyed by `seed` (RandomPurpose::arrival, position = request index), so the same seed
// gives the same arrivals on every machine. Throws specdec::Error unless rate is finite and > 0.
std::vector<double> poisson_arrivals(std::size_t n, double rate, uint64_t seed);

// One request per prompt, with the sampling, max_new_tokens and stop rule of `a`, arriving at 0.
// Request i draws with sequence id i when `sequence_per_request` (each request its own random
// stream, as a serving engine's requests have), else 0 (each then draws exactly what
// `specdec generate` of its prompt draws).
std::vector<BatchRequest> batch_requests(const DecodeArgs& a, const std::vector<std::vector<int32_t>>& prompts,
                                         bool sequence_per_request);

struct BatchRunOptions {
  int concurrency = 8;
  // Called as each request finishes (BatchOptions::on_finished).
  std::function<void(std::size_t, const RequestResult&)> on_finished;
  // A DecodeObserver per request (null: none).
  std::function<DecodeObserver*(std::size_t)> observer_for;
};

// Throws specdec::Error for what a batched run does not take: --fallback-method /
// --fallback-drafter and --drafter-fault (one-sequence runs only).
void check_batch_speculation_args(const DecodeArgs& a);

// Decodes `requests` with the method of `a` (its method options, drafter, --policy and
// --draft-budget-ms: each request its own policy object) on the target's
// backend, `concurrency` sequences at once. `drafter`: as load_drafter gives it for this target
// (null: loaded here when the method needs one). Checks the concurrency and the method first.
BatchResult run_batched(const DecodeArgs& a, const LoadedModel& target, const std::vector<BatchRequest>& requests,
                        const BatchRunOptions& options, const LoadedDrafter* drafter = nullptr);

}  // namespace specdec
