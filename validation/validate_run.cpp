#include "validation/validate_run.hpp"

#include "reference/core/error.hpp"
#include "runtime/backend.hpp"
#include "runtime/method_runner.hpp"
#include "traces/trace.hpp"
#include "validation/validator.hpp"

namespace specdec::validation {

ValidateOutcome run_validation(ValidateRequest r, const TolerancePolicy& policy) {
  DecodeArgs& a = r.run;
  ValidateOutcome out;
  check_backend(a.backend, "--backend");
  std::string trace_path = r.trace;
  const bool candidate_mode = !r.candidate.empty();
  if (candidate_mode && !trace_path.empty()) throw Error("give --trace (a trace of specdec) or --candidate (a trace of another engine), not both");
  if (r.force_drafts && !candidate_mode) throw Error("--force-drafts needs --candidate");
  if (candidate_mode && a.backend != "reference") {
    throw Error("--candidate: the candidate is the trace; choose the live side with --against, not --backend");
  }
  if (!candidate_mode) {
    if (trace_path.empty()) check_backend(r.against, "--against");
  } else {
    check_backend(r.against, "--against");
    trace_path = r.candidate;
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
    if (r.force_drafts && drafter_override.empty() && trace->meta.method != "sequential") {
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
    if (trace->meta.method != a.method.name) {
      throw Error(trace_path + ": the trace's method '" + trace->meta.method + "' differs from its config_json's '" + a.method.name + "'");
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
      if (it == trace->meta.models.end()) throw Error(trace_path + " records no " + role + " model; it cannot be checked r.against " + path);
      if (it->second.fingerprint != fingerprint) {
        throw Error(trace_path + " was recorded with a " + role + " of fingerprint " + it->second.fingerprint + ", but " + path +
                    " has fingerprint " + fingerprint + " (another model, or other weights)");
      }
    };
    check("target", a.model, target.fingerprint);
    if (drafter && !r.force_drafts) check("drafter", drafter->path, drafter->fingerprint);
  }

  struct Loaded {
    std::unique_ptr<LanguageModel> target, draft_lm;
    std::unique_ptr<EagleHead> head;
  };
  auto backend = [&](const std::string& name) {
    Backend b;
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
  // The side specdec runs now: the backend under validation, or with --candidate the reference.
  auto [live, live_models] = backend(candidate_mode ? r.against : a.backend);

  ValidationSetup setup;
  setup.method = a.method.name;
  setup.prompt = prompt;
  setup.sampling = sampling;
  setup.options = options;
  const int capacity = checked_capacity(prompt.size(), options.max_new_tokens, 1, target.model->config().max_position_embeddings);
  if (recorded_drafts) {
    setup.make_proposer = [&](const LanguageModel*, const EagleHead*) { return make_trace_proposer(*trace, trace_path); };
  } else if (a.method.name != "sequential") {
    setup.make_proposer = [&](const LanguageModel* draft_lm, const EagleHead* head) {
      return make_proposer(a, target, drafter ? &*drafter : nullptr, capacity, draft_lm, head);
    };
  }

  if (candidate_mode) {
    out.report = validate_candidate_trace(setup, live, *trace, "candidate " + trace_path, r.force_drafts, policy);
  } else if (trace) {
    out.report = validate_against_trace(setup, live, *trace, "trace " + trace_path, policy);
  } else {
    auto [reference, reference_models] = backend(r.against);
    out.report = validate_backends(setup, live, reference, policy);
  }
  out.json = to_json(out.report);
  out.json["model"] = a.model;
  out.json["model_fingerprint"] = target.fingerprint;
  out.json["method_config"] = method_json(a);
  out.json["sampling"] = sampling;
  out.json["prompt_tokens"] = prompt;
  out.tokenizer = target.tokenizer;
  return out;
}

}  // namespace specdec::validation
