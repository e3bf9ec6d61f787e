// specdec validate: run a method on a backend and compare it step by step with the reference
// backend (--against) or with a recorded trace (--trace), or check an outside engine's recorded
// trace against the reference run live (--candidate), under the tolerance policy of
// docs/validation.md; a batched trace (schema 2.x) sequence by sequence. Exit code 0 = pass,
// 1 = divergence, 2 = the validation could not run (bad options or inputs).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "experiments/sweep/prompt_set.hpp"
#include "reference/core/error.hpp"
#include "validation/validate_run.hpp"

namespace specdec::cli {

namespace {

constexpr int kMaxSeeds = 1000;

// --seeds / --prompts: one live validation per prompt and seed; passes when every run does. The
// text lists each run's verdict (a failure's report in full) and what all of them covered.
int validate_set(const validation::ValidateRequest& base, const validation::TolerancePolicy& policy, int seeds,
                 const std::string& prompts_file, CommandIO& io) {
  struct Input {
    std::string id, text;  // text empty: the command's own prompt
  };
  std::vector<Input> inputs;
  if (prompts_file.empty()) {
    inputs.push_back({"", ""});
  } else {
    if (!base.run.prompt.empty() || !base.run.prompt_ids.empty()) throw Error("give --prompts or --prompt / --prompt-ids, not both");
    for (const sweep::Prompt& p : sweep::load_prompt_file(prompts_file, 0)) inputs.push_back({p.id, p.text});
  }
  nlohmann::json runs = nlohmann::json::array();
  validation::DecisionCoverage total;
  int passed = 0, count = 0;
  std::ostringstream text;
  for (const Input& in : inputs) {
    for (int i = 0; i < seeds; ++i) {
      validation::ValidateRequest r = base;
      r.run.seed = base.run.seed + static_cast<uint64_t>(i);
      if (!in.text.empty()) r.run.prompt = in.text;
      const validation::ValidateOutcome v = validation::run_validation(r, policy);
      const validation::ValidationReport& rep = v.report;
      ++count;
      passed += v.passed() ? 1 : 0;
      total += rep.coverage;
      const std::string name = "seed " + std::to_string(r.run.seed) + (in.id.empty() ? "" : ", prompt " + in.id);
      runs.push_back({{"seed", r.run.seed}, {"prompt_id", in.id}, {"report", v.json}});
      text << name << ": " << (v.passed() ? "PASS" : "FAIL") << ", " << rep.steps_compared << "/" << rep.reference_steps << " steps, "
           << rep.coverage.rejected << " rejected, " << rep.coverage.bonus << " bonus\n";
      if (!v.passed()) validation::print_report(rep, text, v.tokenizer.get());
    }
  }
  if (base.run.json) {
    io.out << nlohmann::json{{"result", passed == count ? "pass" : "fail"},
                             {"runs", runs},
                             {"passed", passed},
                             {"count", count},
                             {"coverage", validation::to_json(total)}}
                  .dump()
           << "\n";
  } else {
    io.out << text.str() << (passed == count ? "PASS" : "FAIL") << "  " << passed << " of " << count << " runs passed";
    if (total.speculative) io.out << "; covered in all: " << validation::coverage_text(total);
    io.out << "\n";
    for (const std::string& gap : validation::coverage_gaps(total)) io.out << "untested: " << gap << "\n";
  }
  return passed == count ? 0 : 1;
}

int validate(const std::vector<std::string>& args, CommandIO& io) {
  DecodeArgs a;
  a.max_new_tokens = 32;
  std::string against = "reference", trace_path, candidate_path, prompts_file;
  int seeds = 1;
  bool print_policy = false, force_drafts = false;
  po::options_description desc("validate options");
  add_decode_options(desc, a);
  desc.add_options()
      ("against", po::value(&against)->default_value(against), "backend to compare with (without --trace): reference | cpu | cuda | plugin:PATH.so")
      ("trace", po::value(&trace_path), "compare with this recorded trace instead (specdec record); the method, prompt, sampling and length come from it, --drafter overrides the recorded drafter path")
      ("candidate", po::value(&candidate_path), "check this trace of another engine instead: the reference (or --against) runs live under its recorded method, prompt, sampling and length and is the reference of the comparison; a batched trace is checked sequence by sequence")
      ("force-drafts", po::bool_switch(&force_drafts), "with --candidate: use the candidate's recorded drafts and trees at every step, so that its target forwards and acceptance are checked exactly whatever drafted them (--drafter then optional)")
      ("seeds", po::value(&seeds)->default_value(1), "validate this many runs, seeds --seed, --seed + 1, ... (sampled and coupled decoding draw other tokens with each): more rejections, residual draws and bonus tokens compared")
      ("prompts", po::value(&prompts_file), "validate every prompt of this file (MT-Bench / Spec-Bench JSONL questions or a JSON object of category -> texts) instead of --prompt, each with every seed")
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
  if (seeds != 1 || !prompts_file.empty()) {
    if (!trace_path.empty() || !candidate_path.empty()) {
      throw Error("--seeds and --prompts validate live runs (against a backend); a trace holds one run of its own");
    }
    if (seeds < 1 || seeds > kMaxSeeds) throw Error("--seeds must be in [1, " + std::to_string(kMaxSeeds) + "], got " + std::to_string(seeds));
    return validate_set(request, policy, seeds, prompts_file, io);
  }
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
