#include "runtime/batch_job.hpp"

#include <cmath>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/policies/registry.hpp"
#include "reference/sampling/counter_rng.hpp"
#include "runtime/batched_run.hpp"

namespace specdec {

void check_concurrency(int64_t b, const std::string& what) {
  if (b < 1 || b > kMaxConcurrency) {
    throw Error(what + " must be in [1, " + std::to_string(kMaxConcurrency) + "] (sequences decoding at once), got " +
                std::to_string(b));
  }
}

std::vector<double> poisson_arrivals(std::size_t n, double rate, uint64_t seed) {
  if (!(rate > 0) || !std::isfinite(rate)) {
    std::ostringstream got;
    got << rate;
    throw Error("the arrival rate must be a finite number of requests per second > 0, got " + got.str());
  }
  std::vector<double> t(n);
  double now = 0;
  for (std::size_t i = 0; i < n; ++i) {
    // Request 0 arrives after a gap too, as in a process observed from time 0.
    now += -std::log(uniform_open(seed, 0, static_cast<uint32_t>(i), RandomPurpose::arrival, 0)) / rate;
    t[i] = now;
  }
  return t;
}

std::vector<BatchRequest> batch_requests(const DecodeArgs& a, const std::vector<std::vector<int32_t>>& prompts,
                                         bool sequence_per_request) {
  const SamplingParams sampling = sampling_params(a);
  const GenerationOptions g = generation_options(a);
  std::vector<BatchRequest> out(prompts.size());
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    BatchRequest& r = out[i];
    r.prompt = prompts[i];
    r.max_new_tokens = g.max_new_tokens;
    r.sampling = sampling;
    r.stop_at_eos = g.stop_at_eos;
    r.sequence = sequence_per_request ? static_cast<uint32_t>(i) : 0;
  }
  return out;
}

void check_batch_speculation_args(const DecodeArgs& a) {
  if (!a.fallback_method.empty() || !a.fallback_drafter.empty()) {
    throw Error("--fallback-method / --fallback-drafter apply to one sequence (generate, record, compare); a batched run "
                "has no fallback drafter (a failing drafter falls back to plain steps)");
  }
  if (!a.drafter_fault.empty()) {
    throw Error("--drafter-fault applies to one sequence (generate, record, compare), not to a batched run");
  }
}

BatchResult run_batched(const DecodeArgs& a, const LoadedModel& target, const std::vector<BatchRequest>& requests,
                        const BatchRunOptions& options, const LoadedDrafter* drafter) {
  check_concurrency(options.concurrency, "concurrency");
  check_batch_speculation_args(a);
  BatchedMethods methods(target);
  const std::vector<std::size_t> lanes(requests.size(), methods.add(a, drafter));
  BatchOptions o;
  o.max_in_flight = options.concurrency;
  o.on_finished = options.on_finished;
  // --policy: one policy object per request; --draft-budget-ms for every sequence.
  const PolicySpec policy = a.policy;
  o.make_policy = [policy](std::size_t) { return make_policy(policy); };
  o.draft_budget_ns = speculation_control(a, nullptr).draft_budget_ns;
  return decode_batched(target.forward_model(), requests, methods.factory(lanes, requests), o, options.observer_for);
}

}  // namespace specdec
