#pragma once
// Recording a decoding run as an HDF5 trace (traces/SCHEMA.md): what `specdec record` and the
// Python module's record() do, from a DecodeArgs.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/decode_request.hpp"
#include "runtime/method_runner.hpp"
#include "traces/trace.hpp"

namespace specdec {

struct RecordOptions {
  std::string out;          // trace file, written atomically
  std::string logits = "topk";  // full | topk (top-k ids and values, logsumexp, checksum)
  int logit_top_k = 20;
};

struct RecordResult {
  std::string trace;
  int64_t steps = 0;
  std::vector<int32_t> output_tokens;
  std::string stop_reason;
  std::vector<DrafterFallback> fallbacks;  // drafters switched off during the run

  // {"trace", "steps", "output_tokens", "stop_reason", "fallbacks"}: record --json.
  nlohmann::json to_json() const;
};

// Checks the options (before any model is loaded), decodes `a` and writes its trace. Throws
// specdec::Error naming the option at fault; nothing is written then.
RecordResult record_run(const DecodeArgs& a, const RecordOptions& options);

// Shared with batched recording (batched_record.hpp): the option checks, and the /meta of a run
// of `a` with generation options `g` (its sequence id included) on `target` with `drafter`.
void check_record_options(const RecordOptions& options);
// Adds the run's drafter fallbacks to meta.config_json as "fallbacks" (traces/SCHEMA.md).
void add_fallbacks(TraceMeta& meta, const std::vector<DrafterFallback>& fallbacks);
TraceMeta record_meta(const DecodeArgs& a, const GenerationOptions& g, const SamplingParams& sampling, const LoadedModel& target,
                      const LoadedDrafter* drafter, const RecordOptions& options);

}  // namespace specdec
