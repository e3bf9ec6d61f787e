// specdec validate: run a method on a backend and compare it step by step with the reference
// backend (--against) or with a recorded trace (--trace), or check an outside engine's recorded
// trace against the reference run live (--candidate), under the tolerance policy of
// docs/validation.md; a batched trace (schema 2.x) sequence by sequence. Exit code 0 = pass,
// 1 = divergence, 2 = the validation could not run (bad options or inputs).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/options.hpp"
#include "validation/validate_run.hpp"

namespace specdec::cli {

namespace {

int validate(const std::vector<std::string>& args, CommandIO& io) {
  DecodeArgs a;
  a.max_new_tokens = 32;
  std::string against = "reference", trace_path, candidate_path;
  bool print_policy = false, force_drafts = false;
  po::options_description desc("validate options");
  add_decode_options(desc, a);
  desc.add_options()
      ("against", po::value(&against)->default_value(against), "backend to compare with (without --trace): reference | cpu | cuda | plugin:PATH.so")
      ("trace", po::value(&trace_path), "compare with this recorded trace instead (specdec record); the method, prompt, sampling and length come from it, --drafter overrides the recorded drafter path")
      ("candidate", po::value(&candidate_path), "check this trace of another engine instead: the reference (or --against) runs live under its recorded method, prompt, sampling and length and is the reference of the comparison; a batched trace is checked sequence by sequence")
      ("force-drafts", po::bool_switch(&force_drafts), "with --candidate: use the candidate's recorded drafts and trees at every step, so that its target forwards and acceptance are checked exactly whatever drafted them (--drafter then optional)")
      ("policy", po::bool_switch(&print_policy), "print the tolerance policy (Markdown table) and exit");
  const validation::TolerancePolicy& policy = validation::TolerancePolicy::defaults();
  // --policy needs nothing else (not even the otherwise required --model).
  if (std::find(args.begin(), args.end(), "--policy") != args.end() && std::find(args.begin(), args.end(), "--help") == args.end()) {
    io.out << validation::policy_markdown(policy);
    return 0;
  }
  if (!parse_options(args, desc, io,
                     "specdec validate --model DIR [--backend cpu] (--against reference | --trace TRACE.h5) [method and prompt options]\n"
                     "       specdec validate --model DIR [--drafter DIR] --candidate ENGINE.h5 [--force-drafts]")) {
    return 0;
  }
  validation::ValidateRequest request;
  request.run = a;
  request.against = against;
  request.trace = trace_path;
  request.candidate = candidate_path;
  request.force_drafts = force_drafts;
  const validation::ValidateOutcome v = validation::run_validation(request, policy);
  if (a.json) {
    io.out << v.json.dump() << "\n";
  } else if (v.batched) {
    validation::print_report(*v.batched, io.out, v.tokenizer.get());
  } else {
    validation::print_report(v.report, io.out, v.tokenizer.get());
  }
  return v.passed() ? 0 : 1;
}

}  // namespace

int run_validate(const std::vector<std::string>& args, CommandIO& io) {
  // Exit code 2 for anything that stops the comparison from running, so that 1 always means a
  // divergence.
  try {
    return validate(args, io);
  } catch (const std::exception& e) {
    io.err << "specdec validate: error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace specdec::cli
