#pragma once
// What a batched run reports, as JSON: one object per request (a line of `specdec batch --out`,
// an entry of Python's generate_batch) and the run's summary (`specdec batch --json`). As in every
// --json output, wall-clock measurements are kept in a "timing" object, so two runs of the same
// requests compare equal once it is dropped (with --rate, arrivals depend on the clock, so the
// step counts can differ too).
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "reference/decoding/batched.hpp"
#include "runtime/decode_request.hpp"
#include "text/tokenizer.hpp"

namespace specdec {

// Mean and percentiles of a latency over requests. Percentiles interpolate linearly between the
// closest ranks (numpy's default); all zero for an empty list.
struct Distribution {
  std::size_t n = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
};
Distribution distribution(std::vector<double> values);
nlohmann::json to_json(const Distribution& d);  // {"n", "mean", "p50", "p90", "p99"}

// Request `index` of a run: its sequence id, prompt length, tokens (and text with a tokenizer),
// stop reason, acceptance, mean draft depth and steps by depth, the drafters switched off, arrival, and under "timing" when it was admitted, got its first token
// and finished, with TTFT, TPOT and queueing delay (seconds).
nlohmann::json request_json(std::size_t index, const BatchRequest& request, const RequestResult& result,
                            const text::Tokenizer* tokenizer);

// How a run was set up, for its summary.
struct BatchSetup {
  const DecodeArgs* args = nullptr;  // method, sampling, lengths, backend
  int concurrency = 1;
  std::optional<double> rate;  // requests/s of Poisson arrivals; none: all at once
};

// The run's summary: requests, generated tokens, method, concurrency, acceptance (AL, by position,
// the accepted-per-step histogram), the policy with the pooled mean draft depth, steps by depth and
// the distribution of the requests' mean depths, the number of drafters switched off, batched steps and rows per target forward; under "timing"
// wall time, throughput (tok/s, req/s), TTFT / TPOT / queueing delay distributions (TPOT over
// requests with two tokens or more) and draft / verify seconds per step.
nlohmann::json batch_summary_json(const BatchResult& result, const BatchSetup& setup);

}  // namespace specdec
