#pragma once
// What validating a batched trace found (specdec validate --trace / --candidate on a schema 2.x
// file): each sequence validated alone, as its own report, and the verdict over all of them.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "validation/validation_report.hpp"

namespace specdec::validation {

struct SequenceReport {
  uint32_t sequence = 0;
  ValidationReport report;
  nlohmann::json json;  // the report with what was run (model, method, sampling, prompt), as one trace gives it
};

struct BatchedValidationReport {
  std::string trace;             // the file
  std::string kind;              // "trace" (a trace of specdec) or "candidate" (another engine's)
  int64_t max_in_flight = 0;
  int64_t batch_steps = 0;
  std::vector<SequenceReport> sequences;  // in the trace's order

  bool passed() const { return first_failure() == nullptr; }
  // The first sequence (in the trace's order) that diverges, or null.
  const SequenceReport* first_failure() const;
};

// {"result", "trace", "kind", "max_in_flight", "batch_steps", "sequences_failed", "failure" (null,
// or the first failing sequence's failure with its "sequence"), "sequences": [{"sequence", ...its
// report}]}.
nlohmann::json to_json(const BatchedValidationReport& report);
// The verdict, then each sequence: its summary line when it passes, its full report when not.
void print_report(const BatchedValidationReport& report, std::ostream& out, const text::Tokenizer* tokenizer = nullptr);

}  // namespace specdec::validation
