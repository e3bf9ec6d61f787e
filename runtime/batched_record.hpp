#pragma once
// Recording a batched run as one batched trace (traces/SCHEMA.md, "Batched traces"): what
// `specdec record --prompts FILE --concurrency B` does. Every prompt is a request, decoded with
// continuous batching (reference/decoding/batched.hpp) with the method of the DecodeArgs and a
// trace recorder of its own; request i is sequence i (its random streams keyed by i), so each
// sequence replays alone as `specdec validate` does it.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/decode_request.hpp"
#include "runtime/record_run.hpp"

namespace specdec {

struct BatchedRecordResult {
  std::string trace;
  int64_t max_in_flight = 0;
  int64_t batch_steps = 0;
  std::vector<RecordResult> sequences;  // per request, sequence id = index; RecordResult::trace is the file

  // {"trace", "max_in_flight", "batch_steps", "sequences": [{"sequence", "steps", "output_tokens",
  // "stop_reason"}]}: record --json.
  nlohmann::json to_json() const;
};

// Checks the options (before any model is loaded), tokenizes `prompts` with the target's
// tokenizer, decodes them `concurrency` at once and writes the batched trace. `a` must not name a
// prompt of its own. Throws specdec::Error naming the option or the prompt at fault; nothing is
// written then.
BatchedRecordResult record_batched_run(const DecodeArgs& a, const std::vector<std::string>& prompts, int64_t concurrency,
                                       const RecordOptions& options);

}  // namespace specdec
