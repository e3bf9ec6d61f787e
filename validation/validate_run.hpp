#pragma once
// A validation run as `specdec validate` and the Python module's validate() describe it: a method
// run on a backend compared step by step with the reference backend (--against), with a recorded
// trace of specdec (--trace), or an outside engine's trace checked against the reference run live
// (--candidate), under a tolerance policy (docs/validation.md).
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/decode_request.hpp"
#include "validation/tolerance_policy.hpp"
#include "validation/validation_report.hpp"

namespace specdec::validation {

struct ValidateRequest {
  DecodeArgs run;                     // model, backend, method, prompt, sampling (from the trace with one)
  std::string against = "reference";  // the backend compared with (or, with a candidate, run live)
  std::string trace;                  // a trace of specdec to compare with
  std::string candidate;              // an outside engine's trace to check
  bool force_drafts = false;          // with a candidate: its recorded drafts at every step
};

struct ValidateOutcome {
  ValidationReport report;
  nlohmann::json json;  // the report with the run's model, fingerprint, method, sampling and prompt
  std::shared_ptr<const text::Tokenizer> tokenizer;  // the target's, for printing; may be null
};

// Checks the request (options are named as the command line names them), loads what it needs and
// validates. Throws specdec::Error when the comparison cannot run; a divergence is in the report.
ValidateOutcome run_validation(ValidateRequest request, const TolerancePolicy& policy = TolerancePolicy::defaults());

}  // namespace specdec::validation
