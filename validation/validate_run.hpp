#pragma once
// A validation run as `specdec validate` and the Python module's validate() describe it: a method
// run on a backend compared step by step with the reference backend (--against), with a recorded
// trace of specdec (--trace), or an outside engine's trace checked against the reference run live
// (--candidate), under a tolerance policy (docs/validation.md). A batched trace (schema 2.x) is
// validated sequence by sequence, each alone under its own sequence id.
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/decode_request.hpp"
#include "validation/batched_report.hpp"
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
  // A batched trace: the first failing sequence's report (else the first sequence's), so that
  // report.passed is the batch's verdict too.
  ValidationReport report;
  // The report with the run's model, fingerprint, method, sampling and prompt; for a batched
  // trace, the batched report's JSON (batched_report.hpp).
  nlohmann::json json;
  std::shared_ptr<const text::Tokenizer> tokenizer;  // the target's, for printing; may be null
  // A batched trace (schema 2.x): every sequence validated alone under its own sequence id.
  std::optional<BatchedValidationReport> batched;

  bool passed() const { return batched ? batched->passed() : report.passed; }
};

// Checks the request (options are named as the command line names them), loads what it needs and
// validates. Throws specdec::Error when the comparison cannot run; a divergence is in the report.
ValidateOutcome run_validation(ValidateRequest request, const TolerancePolicy& policy = TolerancePolicy::defaults());

}  // namespace specdec::validation
