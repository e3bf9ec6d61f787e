#include "runtime/record_run.hpp"

#include "reference/core/error.hpp"
#include "runtime/method_runner.hpp"
#include "traces/trace_recorder.hpp"

namespace specdec {

nlohmann::json RecordResult::to_json() const {
  return {{"trace", trace}, {"steps", steps}, {"output_tokens", output_tokens}, {"stop_reason", stop_reason}};
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
  meta.config_json = nlohmann::json{{"method", method_json(a)},
                                    {"backend", a.backend},
                                    {"threads", a.threads},
                                    {"max_new_tokens", options.max_new_tokens},
                                    {"stop_at_eos", options.stop_at_eos},
                                    {"sequence", options.sequence},
                                    {"logits", o.logits},
                                    {"logit_top_k", o.logit_top_k}}
                         .dump();
  meta.models["target"] = ModelInfo{m.path, m.fingerprint, model_config_to_json(m.model->config()).dump()};
  if (drafter) meta.models["drafter"] = ModelInfo{drafter->path, drafter->fingerprint, drafter->config_json};
  return meta;
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
  write_trace(o.out, trace);
  return RecordResult{o.out, static_cast<int64_t>(trace.steps.size()), r.tokens, r.stop_reason};
}

}  // namespace specdec
