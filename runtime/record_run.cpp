#include "runtime/record_run.hpp"

#include "reference/core/error.hpp"
#include "reference/methods/registry.hpp"
#include "runtime/method_runner.hpp"
#include "runtime/speculation_report.hpp"
#include "traces/trace_recorder.hpp"

namespace specdec {

nlohmann::json RecordResult::to_json() const {
  return {{"trace", trace}, {"steps", steps}, {"output_tokens", output_tokens}, {"stop_reason", stop_reason},
          {"fallbacks", fallbacks_json(fallbacks)}};
}

void check_record_options(const RecordOptions& o) {
  if (o.out.empty()) throw Error("--out: no trace file given");
  if (o.logits != "full" && o.logits != "topk") throw Error("--logits must be 'full' or 'topk', not '" + o.logits + "'");
  if (o.logit_top_k < 1) throw Error("--logit-top-k must be >= 1");
}

TraceMeta record_meta(const DecodeArgs& a, const GenerationOptions& options, const SamplingParams& sampling, const LoadedModel& m,
                      const LoadedDrafter* drafter, const RecordOptions& o) {
  TraceMeta meta;
  meta.method = a.method.name;
  meta.seed = sampling.seed;
  meta.sampling_json = nlohmann::json(sampling).dump();
  // The backend and thread count describe how the run was computed, not what it computed:
  // config_json is where the schema keeps them (semantic comparison ignores it).
  nlohmann::json config = nlohmann::json{{"method", method_json(a)},
                                    {"backend", a.backend},
                                    {"threads", a.threads},
                                    {"max_new_tokens", options.max_new_tokens},
                                    {"stop_at_eos", options.stop_at_eos},
                                    {"sequence", options.sequence},
                                    {"logits", o.logits},
                                    {"logit_top_k", o.logit_top_k}};
  // The speculation policy and what steers fallback (schema 1.x, optional: a trace without
  // "policy" ran the fixed policy).
  config["policy"] = a.policy.to_json();
  if (a.draft_budget_ms > 0) config["draft_budget_ms"] = a.draft_budget_ms;
  if (!a.fallback_method.empty()) config["fallback"] = method_json(fallback_args(a));
  if (!a.drafter_fault.empty()) config["drafter_fault"] = a.drafter_fault;
  meta.config_json = config.dump();
  meta.models["target"] = ModelInfo{m.path, m.fingerprint(), model_config_to_json(m.config).dump()};
  // A draft-free method (n-gram lookup, suffix decoding) has a drafter without a model: no "drafter" role.
  if (drafter && method_entry(a.method.name).drafter.loads_checkpoint()) {
    meta.models["drafter"] = ModelInfo{drafter->path, drafter->fingerprint, drafter->config_json};
  }
  return meta;
}

void add_fallbacks(TraceMeta& meta, const std::vector<DrafterFallback>& fallbacks) {
  nlohmann::json config = nlohmann::json::parse(meta.config_json);
  config["fallbacks"] = fallbacks_json(fallbacks);
  meta.config_json = config.dump();
}

RecordResult record_run(const DecodeArgs& a, const RecordOptions& o) {
  check_record_options(o);
  DecodeJob job = prepare_decode(a);
  const GenerationOptions& options = job.options;
  const SamplingParams& sampling = job.sampling;
  const LoadedModel& m = job.target;
  const std::optional<LoadedDrafter> drafter = load_drafter(a, m);
  TraceRecorder recorder(record_meta(a, options, sampling, m, drafter ? &*drafter : nullptr, o),
                         LogitRecording{o.logits == "full", o.logit_top_k});
  const GenerationResult r = run_method(a, m, job.prompt, sampling, options, &recorder, drafter ? &*drafter : nullptr);
  Trace& trace = recorder.trace();
  trace.timing.total_ns = r.stats.prefill_ns + r.stats.decode_ns;
  add_fallbacks(trace.meta, r.fallbacks);
  write_trace(o.out, trace);
  return RecordResult{o.out, static_cast<int64_t>(trace.steps.size()), r.tokens, r.stop_reason, r.fallbacks};
}

}  // namespace specdec
