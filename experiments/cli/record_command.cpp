// specdec record: decode a prompt and write every step to an HDF5 trace (traces/SCHEMA.md).
#include <ctime>
#include <nlohmann/json.hpp>
#include <ostream>

#include "experiments/cli/options.hpp"
#include "reference/core/error.hpp"
#include "experiments/cli/method_runner.hpp"
#include "specdec/version.hpp"
#include "traces/trace_recorder.hpp"

namespace specdec::cli {

int run_record(const std::vector<std::string>& args, CommandIO& io) {
  DecodeArgs a;
  std::string out, logits = "topk";
  int logit_top_k = 20;
  po::options_description desc("record options");
  add_decode_options(desc, a);
  desc.add_options()
      ("out", po::value(&out)->required(), "trace file to write (HDF5; written atomically)")
      ("logits", po::value(&logits)->default_value(logits), "how logits rows are kept: full | topk (top-k ids and values, logsumexp, checksum)")
      ("logit-top-k", po::value(&logit_top_k)->default_value(logit_top_k), "k for --logits topk");
  if (!parse_options(args, desc, io, "specdec record --model DIR (--prompt TEXT | --prompt-ids IDS) --out TRACE.h5 [options]")) return 0;
  if (logits != "full" && logits != "topk") throw Error("--logits must be 'full' or 'topk', not '" + logits + "'");
  if (logit_top_k < 1) throw Error("--logit-top-k must be >= 1");
  DecodeJob job = prepare_decode(a);
  const GenerationOptions& options = job.options;
  const SamplingParams& sampling = job.sampling;
  const LoadedModel& m = job.target;
  const std::vector<int32_t>& prompt = job.prompt;

  TraceMeta meta;
  meta.method = a.method;
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
                                    {"logits", logits},
                                    {"logit_top_k", logit_top_k}}
                         .dump();
  meta.models["target"] = ModelInfo{m.path, m.fingerprint, model_config_to_json(m.model->config()).dump()};
  const std::optional<LoadedDrafter> drafter = load_drafter(a, m);
  if (drafter) meta.models["drafter"] = ModelInfo{drafter->path, drafter->fingerprint, drafter->config_json};
  TraceRecorder recorder(meta, LogitRecording{logits == "full", logit_top_k});
  const GenerationResult r = run_method(a, m, prompt, sampling, options, &recorder, drafter ? &*drafter : nullptr);
  Trace& trace = recorder.trace();
  trace.timing.total_ns = r.stats.prefill_ns + r.stats.decode_ns;
  write_trace(out, trace);

  if (a.json) {
    io.out << nlohmann::json{{"trace", out}, {"steps", trace.steps.size()}, {"output_tokens", r.tokens},
                             {"stop_reason", r.stop_reason}}
                  .dump()
           << "\n";
  } else {
    io.out << "wrote " << out << ": " << a.method << ", " << trace.steps.size() << " steps, " << r.tokens.size()
           << " tokens, stop: " << r.stop_reason << ", logits " << (logits == "full" ? "full" : "top-" + std::to_string(logit_top_k))
           << "\n";
  }
  return 0;
}

}  // namespace specdec::cli
