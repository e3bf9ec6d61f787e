#include "validation/validate_run.hpp"

#include <map>

#include "reference/core/error.hpp"
#include "runtime/backend.hpp"
#include "reference/drafting/suffix_proposer.hpp"
#include "reference/methods/registry.hpp"
#include "reference/policies/registry.hpp"
#include "runtime/method_runner.hpp"
#include "traces/batched_trace.hpp"
#include "traces/trace.hpp"
#include "traces/trace_check.hpp"
#include "reference/io/json_input.hpp"
#include "validation/draft_rule.hpp"
#include "validation/validator.hpp"

namespace specdec::validation {

namespace {

// Target copies loaded once per validation: a batched trace's sequences share them.
struct TargetCache {
  std::string path;
  std::optional<LoadedModel> reference;
  std::map<std::string, std::unique_ptr<LanguageModel>> backends;  // by backend name, not "reference"

  const LoadedModel& load_reference(const std::string& model) {
    if (!reference || path != model) {
      reference = load_model(model, "reference");
      backends.clear();
      path = model;
    }
    return *reference;
  }
  const LanguageModel* target_on(const std::string& backend) {
    if (backend == "reference") return &reference->reference();
    auto& slot = backends[backend];
    if (!slot) slot = load_backend(backend, path);
    return slot.get();
  }
};

// One sequence of a batched trace: the others' responses as they joined the run's shared state,
// and the sequence's place in the request order (a draft-free method's shared state).
struct BatchPlace {
  std::vector<EarlierResponse> responses;
  size_t request = 0;
};

// Suffix decoding for one sequence of a batch: before each step it drafts, the responses of the
// others that had joined the run's shared tree by then join it. The step is the trace's step
// drafted after a history of this length (the run replays the trace while they agree).
class ResponsesJoining final : public Proposer {
 public:
  ResponsesJoining(std::unique_ptr<Proposer> inner, const Trace& trace, const std::vector<EarlierResponse>& responses,
                   std::shared_ptr<SuffixResponses> shared)
      : inner_(std::move(inner)), trace_(trace), responses_(responses), shared_(std::move(shared)) {}
  std::string name() const override { return inner_->name(); }
  int max_nodes() const override { return inner_->max_nodes(); }
  int max_depth() const override { return inner_->max_depth(); }
  Proposal propose(const DraftContext& context) override {
    const auto length = static_cast<int64_t>(context.sequence->size());
    size_t step = 0;  // the last step of the trace drafted after at most this many tokens
    while (step + 1 < trace_.steps.size() && trace_.steps[step + 1].position <= length) ++step;
    for (; next_ < responses_.size() && responses_[next_].before_step <= step; ++next_)
      shared_->finish(responses_[next_].request, responses_[next_].tokens);
    return inner_->propose(context);
  }

 private:
  std::unique_ptr<Proposer> inner_;
  const Trace& trace_;
  const std::vector<EarlierResponse>& responses_;
  std::shared_ptr<SuffixResponses> shared_;
  size_t next_ = 0;
};

// One sequence's run validated: against --against (no trace), against a trace of specdec, or
// (candidate_mode) an outside engine's trace against the live reference. `trace_path` names the
// trace in messages ("FILE", or "FILE sequence N" for one sequence of a batch).
// `batch`: the sequence's place in a batched trace (null for a trace of one sequence).
ValidateOutcome validate_one(DecodeArgs a, const ValidateRequest& r, const Trace* trace, const std::string& trace_path,
                             bool candidate_mode, const TolerancePolicy& policy, TargetCache& targets, const BatchPlace* batch = nullptr) {
  ValidateOutcome out;
  SamplingParams sampling;
  bool recorded_drafts = false;  // --force-drafts without a drafter: propose what the trace proposed
  if (trace) {
    const std::string drafter_override = a.drafter;
    decode_args_from_trace_config(trace->meta.config_json, trace_path, a);
    if (!drafter_override.empty()) a.drafter = drafter_override;
    if (r.force_drafts && drafter_override.empty() && trace->meta.method != "sequential") {
      recorded_drafts = true;
      a.drafter.clear();
    }
    const nlohmann::json sj = parse_json(trace->meta.sampling_json, trace_path + ": /meta/sampling_json");
    try {
      sampling = sj.get<SamplingParams>();
    } catch (const Error& e) {
      throw Error(trace_path + ": /meta/sampling_json: " + e.what());
    } catch (const nlohmann::json::exception& e) {
      throw Error(trace_path + ": /meta/sampling_json: " + e.what());
    }
    if (trace->meta.method != a.method.name) {
      throw Error(trace_path + ": the trace's method '" + trace->meta.method + "' differs from its config_json's '" + a.method.name + "'");
    }
  } else {
    sampling = sampling_params(a);
  }
  if (!a.fallback_method.empty() || !a.drafter_fault.empty()) {
    throw Error("validate runs the method's own drafter on both sides; --fallback-method / --drafter-fault are not "
                "validated (record such a run and compare its drafts with --force-drafts)");
  }
  apply_threads(a.threads);
  if (!recorded_drafts) check_method_args(a);
  const GenerationOptions options = generation_options(a);

  // The reference copy of every model, plus the backends compared.
  const LoadedModel& target = targets.load_reference(a.model);
  const std::vector<int32_t> prompt = trace ? trace->prompt : prompt_tokens(a, target);
  DecodeArgs reference_args = a;
  reference_args.backend = "reference";
  auto check = [&](const std::string& role, const std::string& path, const std::string& fingerprint) {
    const auto it = trace->meta.models.find(role);
    if (it == trace->meta.models.end()) throw Error(trace_path + " records no " + role + " model; it cannot be checked against " + path);
    if (it->second.fingerprint != fingerprint) {
      throw Error(trace_path + " was recorded with a " + role + " of fingerprint " + it->second.fingerprint + ", but " + path +
                  " has fingerprint " + fingerprint + " (another model, or other weights)");
    }
  };
  // The target first: a trace of another model is reported as such, before anything about its drafter.
  if (trace) check("target", a.model, target.fingerprint());
  const std::optional<LoadedDrafter> drafter = recorded_drafts ? std::nullopt : load_drafter(reference_args, target);
  // A draft-free method's drafter is the token history: no checkpoint, nothing to fingerprint.
  if (trace && drafter && !r.force_drafts && method_entry(a.method.name).drafter.loads_checkpoint()) {
    check("drafter", drafter->path, drafter->fingerprint);
  }

  struct Loaded {
    std::unique_ptr<LanguageModel> draft_lm;
    std::unique_ptr<EagleHead> head;
  };
  auto backend = [&](const std::string& name) {
    Backend b;
    b.name = name;
    Loaded owned;
    if (name != "reference") {
      if (drafter && drafter->model) owned.draft_lm = load_backend(name, a.drafter);
      if (drafter && drafter->head) owned.head = std::make_unique<EagleHead>(bind_head(name, *drafter->head));
    }
    b.target = targets.target_on(name);
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
  const int capacity = checked_capacity(prompt.size(), options.max_new_tokens, 1, target.config.max_position_embeddings);
  // A draft-free method (n-gram lookup, suffix decoding): its rule, made afresh for every run with
  // a run state of its own (suffix decoding's earlier responses), so that every run — the live
  // one, a rerun after a near-tie, the check of a candidate's drafts — drafts from the same state.
  // One sequence of a batch of suffix decoding finds the state as it grew while the sequence
  // decoded: the requests started before it, the others' responses joining as they finished.
  const MethodEntry& entry = method_entry(a.method.name);
  const bool draft_free = entry.drafter.kind == DrafterNeed::Kind::context;
  const bool shares_responses = draft_free && batch && entry.make_run_state &&
                                std::dynamic_pointer_cast<SuffixResponses>(entry.make_run_state(a.method.normalized()));
  auto rule_proposer = [&a, &target, &entry, capacity, batch, trace, shares_responses]() -> std::unique_ptr<Proposer> {
    ProposerInputs in;
    in.target = &target.config;
    in.capacity = capacity;
    if (!shares_responses) return make_method_proposer(a.method, in);
    const auto shared = std::dynamic_pointer_cast<SuffixResponses>(entry.make_run_state(a.method.normalized()));
    for (size_t k = 0; k < batch->request; ++k) shared->start();  // its id in the shared state is its place
    in.run_state = shared;
    return std::make_unique<ResponsesJoining>(make_method_proposer(a.method, in), *trace, batch->responses, shared);
  };
  if (draft_free) {
    setup.make_rule_proposer = rule_proposer;
    if (a.policy.name != "fixed") setup.make_rule_policy = [&a] { return make_policy(a.policy); };
  }
  if (recorded_drafts) {
    setup.make_proposer = [&](const LanguageModel*, const EagleHead*) { return make_trace_proposer(*trace, trace_path); };
  } else if (a.method.name != "sequential") {
    setup.make_proposer = [&, rule_proposer](const LanguageModel* draft_lm, const EagleHead* head) -> std::unique_ptr<Proposer> {
      if (draft_free) return rule_proposer();
      return make_proposer(a, target, drafter ? &*drafter : nullptr, capacity, draft_lm, head);
    };
    // The run's (or the trace's) speculation policy: the same depth each step, so the same drafts.
    // Recorded drafts need none: the trace proposes what it recorded, empty drafts included.
    if (a.policy.name != "fixed") setup.make_policy = [&a] { return make_policy(a.policy); };
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
  out.json["model_fingerprint"] = target.fingerprint();
  out.json["method_config"] = method_json(a);
  out.json["sampling"] = sampling;
  out.json["prompt_tokens"] = prompt;
  out.tokenizer = target.tokenizer;
  return out;
}

// Every sequence of a batched trace validated alone, under its own sequence id (its random
// streams are keyed by it, so it decodes as it did in the batch).
ValidateOutcome validate_batch(const ValidateRequest& r, const BatchedTrace& batch, const std::string& path, bool candidate_mode,
                               const TolerancePolicy& policy, TargetCache& targets) {
  // One contract for the whole file: checked once, as for a one-sequence trace.
  if (!candidate_mode) check_exactness_contract(sequence_trace(batch, 0), path);
  BatchedValidationReport b;
  b.trace = path;
  b.kind = candidate_mode ? "candidate" : "trace";
  b.max_in_flight = batch.max_in_flight;
  b.batch_steps = static_cast<int64_t>(batch.schedule.size());
  ValidateOutcome out;
  for (std::size_t i = 0; i < batch.sequences.size(); ++i) {
    const Trace t = sequence_trace(batch, i);
    const uint32_t id = batch.sequences[i].id;
    const BatchPlace place{earlier_responses(batch, i), i};
    ValidateOutcome one = validate_one(r.run, r, &t, path + " sequence " + std::to_string(id), candidate_mode, policy, targets, &place);
    out.tokenizer = one.tokenizer;
    b.sequences.push_back({id, std::move(one.report), std::move(one.json)});
  }
  const SequenceReport* failure = b.first_failure();
  out.report = failure ? failure->report : b.sequences.front().report;
  out.json = to_json(b);
  out.batched = std::move(b);
  return out;
}

}  // namespace

ValidateOutcome run_validation(ValidateRequest r, const TolerancePolicy& policy) {
  DecodeArgs& a = r.run;
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

  TargetCache targets;
  if (trace_path.empty()) return validate_one(a, r, nullptr, "", false, policy, targets);
  if (!a.prompt.empty() || !a.prompt_ids.empty()) throw Error(trace_option + ": the prompt comes from the trace; drop --prompt / --prompt-ids");
  // Every check of `specdec trace check` first: a trace it rejects is never compared.
  const CheckedTraceFile file = read_checked_trace_file(trace_path);
  if (file.batch) return validate_batch(r, *file.batch, trace_path, candidate_mode, policy, targets);
  const Trace& trace = *file.trace;
  if (!candidate_mode) check_exactness_contract(trace, trace_path);
  return validate_one(a, r, &trace, trace_path, candidate_mode, policy, targets);
}

}  // namespace specdec::validation
