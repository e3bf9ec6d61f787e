// specdec validate: run a method on a backend and compare it step by step with the reference
// backend (--against) or with a recorded trace (--trace), or check an outside engine's recorded
// trace against the reference run live (--candidate), under the tolerance policy of
// docs/validation.md. Exit code 0 = pass, 1 = divergence, 2 = the validation could not run
// (bad options or inputs).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>

#include "experiments/runtime/backend.hpp"
#include "experiments/cli/method_runner.hpp"
#include "experiments/cli/options.hpp"
#include "experiments/validation/validator.hpp"
#include "reference/core/error.hpp"
#include "traces/trace.hpp"

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
      ("candidate", po::value(&candidate_path), "check this trace of another engine instead: the reference (or --against) runs live under its recorded method, prompt, sampling and length and is the reference of the comparison")
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
  check_backend(a.backend, "--backend");
  const bool candidate_mode = !candidate_path.empty();
  if (candidate_mode && !trace_path.empty()) throw Error("give --trace (a trace of specdec) or --candidate (a trace of another engine), not both");
  if (force_drafts && !candidate_mode) throw Error("--force-drafts needs --candidate");
  if (candidate_mode && a.backend != "reference") {
    throw Error("--candidate: the candidate is the trace; choose the live side with --against, not --backend");
  }
  if (!candidate_mode) {
    if (trace_path.empty()) check_backend(against, "--against");
  } else {
    check_backend(against, "--against");
    trace_path = candidate_path;
  }
  const std::string trace_option = candidate_mode ? "--candidate" : "--trace";

  std::optional<Trace> trace;
  SamplingParams sampling;
  bool recorded_drafts = false;  // --force-drafts without a drafter: propose what the trace proposed
  if (!trace_path.empty()) {
    if (!a.prompt.empty() || !a.prompt_ids.empty()) throw Error(trace_option + ": the prompt comes from the trace; drop --prompt / --prompt-ids");
    trace = read_trace(trace_path);
    if (!candidate_mode) check_exactness_contract(*trace, trace_path);
    const std::string drafter_override = a.drafter;
    decode_args_from_trace_config(trace->meta.config_json, trace_path, a);
    if (!drafter_override.empty()) a.drafter = drafter_override;
    if (force_drafts && drafter_override.empty() && trace->meta.method != "sequential") {
      recorded_drafts = true;
      a.drafter.clear();
    }
    const auto sj = nlohmann::json::parse(trace->meta.sampling_json, nullptr, false);
    if (sj.is_discarded()) throw Error(trace_path + ": /meta/sampling_json is not JSON");
    try {
      sampling = sj.get<SamplingParams>();
    } catch (const Error& e) {
      throw Error(trace_path + ": /meta/sampling_json: " + e.what());
    }
    if (trace->meta.method != a.method) {
      throw Error(trace_path + ": the trace's method '" + trace->meta.method + "' differs from its config_json's '" + a.method + "'");
    }
  } else {
    sampling = sampling_params(a);
  }
  apply_threads(a.threads);
  if (!recorded_drafts) check_method_args(a);
  const GenerationOptions options = generation_options(a);

  // The reference copy of every model, plus the backends compared.
  const LoadedModel target = load_model(a.model, "reference");
  const std::vector<int32_t> prompt = trace ? trace->prompt : prompt_tokens(a, target);
  DecodeArgs reference_args = a;
  reference_args.backend = "reference";
  const std::optional<LoadedDrafter> drafter = recorded_drafts ? std::nullopt : load_drafter(reference_args, target);
  if (trace) {
    auto check = [&](const std::string& role, const std::string& path, const std::string& fingerprint) {
      const auto it = trace->meta.models.find(role);
      if (it == trace->meta.models.end()) throw Error(trace_path + " records no " + role + " model; it cannot be checked against " + path);
      if (it->second.fingerprint != fingerprint) {
        throw Error(trace_path + " was recorded with a " + role + " of fingerprint " + it->second.fingerprint + ", but " + path +
                    " has fingerprint " + fingerprint + " (another model, or other weights)");
      }
    };
    check("target", a.model, target.fingerprint);
    if (drafter && !force_drafts) check("drafter", drafter->path, drafter->fingerprint);
  }

  struct Loaded {
    std::unique_ptr<LanguageModel> target, draft_lm;
    std::unique_ptr<EagleHead> head;
  };
  auto backend = [&](const std::string& name) {
    validation::Backend b;
    b.name = name;
    Loaded owned;
    if (name != "reference") {
      owned.target = load_backend(name, a.model);
      if (drafter && drafter->model) owned.draft_lm = load_backend(name, a.drafter);
      if (drafter && drafter->head) owned.head = std::make_unique<EagleHead>(bind_head(name, *drafter->head));
    }
    b.target = owned.target ? owned.target.get() : target.model.get();
    if (drafter && drafter->model) b.draft_lm = owned.draft_lm ? owned.draft_lm.get() : drafter->model.get();
    if (drafter && drafter->head) b.head = owned.head ? owned.head.get() : drafter->head.get();
    return std::make_pair(b, std::move(owned));
  };
  auto [candidate, candidate_models] = backend(candidate_mode ? against : a.backend);

  validation::ValidationSetup setup;
  setup.method = a.method;
  setup.prompt = prompt;
  setup.sampling = sampling;
  setup.options = options;
  const int capacity = checked_capacity(prompt.size(), options.max_new_tokens, 1, target.model->config().max_position_embeddings);
  if (recorded_drafts) {
    setup.make_proposer = [&](const LanguageModel*, const EagleHead*) { return validation::make_trace_proposer(*trace, trace_path); };
  } else if (a.method != "sequential") {
    setup.make_proposer = [&](const LanguageModel* draft_lm, const EagleHead* head) {
      return make_proposer(a, target, drafter ? &*drafter : nullptr, capacity, draft_lm, head);
    };
  }

  validation::ValidationReport report;
  if (candidate_mode) {
    report = validation::validate_candidate_trace(setup, candidate, *trace, "candidate " + trace_path, force_drafts, policy);
  } else if (trace) {
    report = validation::validate_against_trace(setup, candidate, *trace, "trace " + trace_path, policy);
  } else {
    auto [reference, reference_models] = backend(against);
    report = validation::validate_backends(setup, candidate, reference, policy);
  }
  if (a.json) {
    nlohmann::json j = validation::to_json(report);
    j["model"] = a.model;
    j["model_fingerprint"] = target.fingerprint;
    j["method_config"] = method_json(a);
    j["sampling"] = sampling;
    j["prompt_tokens"] = prompt;
    io.out << j.dump() << "\n";
  } else {
    validation::print_report(report, io.out, target.tokenizer.get());
  }
  return report.passed ? 0 : 1;
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
