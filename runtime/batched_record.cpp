#include "runtime/batched_record.hpp"

#include <memory>

#include "reference/core/error.hpp"
#include "runtime/batch_job.hpp"
#include "runtime/method_runner.hpp"
#include "traces/batched_trace.hpp"
#include "traces/trace_recorder.hpp"

namespace specdec {

nlohmann::json BatchedRecordResult::to_json() const {
  nlohmann::json seqs = nlohmann::json::array();
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    const RecordResult& r = sequences[i];
    seqs.push_back({{"sequence", i}, {"steps", r.steps}, {"output_tokens", r.output_tokens}, {"stop_reason", r.stop_reason}});
  }
  return {{"trace", trace}, {"max_in_flight", max_in_flight}, {"batch_steps", batch_steps}, {"sequences", seqs}};
}

BatchedRecordResult record_batched_run(const DecodeArgs& a, const std::vector<std::string>& prompts, int64_t concurrency,
                                       const RecordOptions& o) {
  check_record_options(o);
  check_concurrency(concurrency, "--concurrency");
  if (!a.prompt.empty() || !a.prompt_ids.empty()) throw Error("give --prompts FILE or --prompt / --prompt-ids, not both");
  if (prompts.empty()) throw Error("--prompts: no prompts to record");
  if (prompts.size() > 0xFFFFFFFFULL) throw Error("--prompts: more prompts than sequence ids (2^32)");
  apply_threads(a.threads);
  check_method_args(a);
  const SamplingParams sampling = sampling_params(a);
  const GenerationOptions options = generation_options(a);
  const LoadedModel target = load_model(a.model, a.backend);

  std::vector<std::vector<int32_t>> ids;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    DecodeArgs p = a;
    p.prompt = prompts[i];
    try {
      if (p.prompt.empty()) throw Error("empty prompt");
      ids.push_back(prompt_tokens(p, target));
    } catch (const Error& e) {
      throw Error("--prompts: prompt " + std::to_string(i) + ": " + e.what());
    }
  }
  const std::optional<LoadedDrafter> drafter = load_drafter(a, target);
  const LoadedDrafter* d = drafter ? &*drafter : nullptr;
  // Request i is sequence i: each its own random stream, as a serving engine's requests have.
  const std::vector<BatchRequest> requests = batch_requests(a, ids, true);
  std::vector<std::unique_ptr<TraceRecorder>> recorders;
  for (const BatchRequest& r : requests) {
    DecodeArgs ai = a;
    ai.sequence = r.sequence;
    GenerationOptions gi = options;
    gi.sequence = r.sequence;
    recorders.push_back(std::make_unique<TraceRecorder>(record_meta(ai, gi, sampling, target, d, o),
                                                        LogitRecording{o.logits == "full", o.logit_top_k}));
  }
  BatchRunOptions run;
  run.concurrency = static_cast<int>(concurrency);
  run.observer_for = [&recorders](std::size_t i) -> DecodeObserver* { return recorders[i].get(); };
  const BatchResult result = run_batched(a, target, requests, run, d);

  BatchedTrace batch;
  batch.max_in_flight = concurrency;
  BatchedRecordResult out;
  out.trace = o.out;
  out.max_in_flight = concurrency;
  out.batch_steps = static_cast<int64_t>(result.steps.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    Trace& t = recorders[i]->trace();
    const GenerationResult& g = result.requests[i].generation;
    t.timing.total_ns = g.stats.prefill_ns + g.stats.decode_ns;
    add_fallbacks(t.meta, g.fallbacks);
    out.sequences.push_back({o.out, static_cast<int64_t>(t.steps.size()), g.tokens, g.stop_reason, g.fallbacks});
    batch.sequences.push_back({requests[i].sequence, std::move(t)});
  }
  // Each entry of a batch step ran its request's next step: one target forward, one trace step.
  std::vector<int64_t> next(requests.size(), 0);
  for (const BatchStep& s : result.steps) {
    std::vector<ScheduledStep>& entries = batch.schedule.emplace_back();
    for (const BatchStep::Entry& e : s.entries) entries.push_back({requests[e.request].sequence, next[e.request]++, e.rows});
  }
  write_batched_trace(o.out, batch);
  return out;
}

}  // namespace specdec
